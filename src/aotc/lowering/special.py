"""Special functions (torch.special, digamma, lgamma, polygamma, i0, erfc, igamma): one IR op each,
spelled by aotc's own C++ implementations (kernels/aotc_special.h). Integer and bool inputs
compute in float32, as PyTorch promotes them."""
from __future__ import annotations

import torch

from ..ir.expr import Binary, BinaryOp, Unary, UnaryOp, constant
from .common import operand
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "special"

_UNARY = {
    aten.erfc.default: UnaryOp.ERFC, aten.lgamma.default: UnaryOp.LGAMMA,
    aten.digamma.default: UnaryOp.DIGAMMA, aten.i0.default: UnaryOp.I0,
    aten.special_i0e.default: UnaryOp.I0E, aten.special_i1.default: UnaryOp.I1,
    aten.special_i1e.default: UnaryOp.I1E,
    aten.special_modified_bessel_i0.default: UnaryOp.I0,
    aten.special_modified_bessel_i1.default: UnaryOp.I1,
    aten.special_modified_bessel_k0.default: UnaryOp.K0,
    aten.special_modified_bessel_k1.default: UnaryOp.K1,
    aten.special_scaled_modified_bessel_k0.default: UnaryOp.K0E,
    aten.special_scaled_modified_bessel_k1.default: UnaryOp.K1E,
    aten.special_bessel_j0.default: UnaryOp.J0, aten.special_bessel_j1.default: UnaryOp.J1,
    aten.special_bessel_y0.default: UnaryOp.Y0, aten.special_bessel_y1.default: UnaryOp.Y1,
    aten.special_spherical_bessel_j0.default: UnaryOp.SPHERICAL_J0,
    aten.special_erfcx.default: UnaryOp.ERFCX, aten.special_ndtr.default: UnaryOp.NDTR,
    aten.special_log_ndtr.default: UnaryOp.LOG_NDTR,
    aten.special_ndtri.default: UnaryOp.NDTRI, aten.special_airy_ai.default: UnaryOp.AIRY_AI,
    aten.erfinv.default: UnaryOp.ERFINV,
}


def _register_unary(op, uop: UnaryOp) -> None:
    @register_lowering(op, family=FAMILY)
    def lower(ctx, x):
        d = ctx.out_dtype
        return ctx.pointwise(Unary(uop, operand(x, d, ctx.out_sizes), d))


for _op, _uop in _UNARY.items():
    _register_unary(_op, _uop)


@register_lowering(aten.special_zeta.default, aten.special_zeta.self_scalar,
                   aten.special_zeta.other_scalar, family=FAMILY)
def lower_zeta(ctx, x, q):
    d, s = ctx.out_dtype, ctx.out_sizes
    return ctx.pointwise(Binary(BinaryOp.ZETA, operand(x, d, s), operand(q, d, s), d))


def _register_binary(op, bop: BinaryOp) -> None:
    @register_lowering(op, family=FAMILY)
    def lower(ctx, a, x):
        d, s = ctx.out_dtype, ctx.out_sizes
        return ctx.pointwise(Binary(bop, operand(a, d, s), operand(x, d, s), d))


for _op, _bop in {aten.igamma.default: BinaryOp.IGAMMA,
                  aten.igammac.default: BinaryOp.IGAMMAC}.items():
    _register_binary(_op, _bop)


@register_lowering(aten.polygamma.default, family=FAMILY)
def lower_polygamma(ctx, n, x):
    d, s = ctx.out_dtype, ctx.out_sizes
    return ctx.pointwise(Binary(BinaryOp.POLYGAMMA, constant(int(n), d), operand(x, d, s), d))


_POLYNOMIALS = {
    aten.special_chebyshev_polynomial_t: BinaryOp.CHEBYSHEV_T,
    aten.special_chebyshev_polynomial_u: BinaryOp.CHEBYSHEV_U,
    aten.special_chebyshev_polynomial_v: BinaryOp.CHEBYSHEV_V,
    aten.special_chebyshev_polynomial_w: BinaryOp.CHEBYSHEV_W,
    aten.special_shifted_chebyshev_polynomial_t: BinaryOp.SHIFTED_CHEBYSHEV_T,
    aten.special_shifted_chebyshev_polynomial_u: BinaryOp.SHIFTED_CHEBYSHEV_U,
    aten.special_shifted_chebyshev_polynomial_v: BinaryOp.SHIFTED_CHEBYSHEV_V,
    aten.special_shifted_chebyshev_polynomial_w: BinaryOp.SHIFTED_CHEBYSHEV_W,
    aten.special_hermite_polynomial_h: BinaryOp.HERMITE_H,
    aten.special_hermite_polynomial_he: BinaryOp.HERMITE_HE,
    aten.special_laguerre_polynomial_l: BinaryOp.LAGUERRE_L,
    aten.special_legendre_polynomial_p: BinaryOp.LEGENDRE_P,
}


def _register_polynomial(packet, bop: BinaryOp) -> None:
    @register_lowering(packet.default, packet.x_scalar, packet.n_scalar, family=FAMILY)
    def lower(ctx, x, n):
        d, s = ctx.out_dtype, ctx.out_sizes
        return ctx.pointwise(Binary(bop, operand(x, d, s), operand(n, d, s), d))


for _packet, _bop in _POLYNOMIALS.items():
    _register_polynomial(_packet, _bop)
