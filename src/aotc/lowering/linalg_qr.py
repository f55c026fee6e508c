"""Householder QR on the shipped kernels (kernels/linalg.cpp), with LAPACK's conventions so
that the factors are the ones eager computes: geqrf, linalg_qr (reduced, complete, r), qr,
householder_product (orgqr) and ormqr."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import Binary, BinaryOp, IndexValue, Where, constant
from ..ir.linalg import Linalg, LinalgOp
from ..ir.symbols import index_vars, numel
from .common import broadcast_shapes
from .context import LoweringContext, TensorValue
from .linalg_matrices import contiguous, kernel_dtype, packed_part
from .registry import register_lowering
from .views import lower_expand, remap

aten = torch.ops.aten
FAMILY = "linalg"


def geqrf(ctx: LoweringContext, a: TensorValue) -> tuple[TensorValue, TensorValue]:
    """(R and the reflectors [*, m, n], tau [*, min(m, n)]) as views of the kernel's buffer."""
    d = kernel_dtype(ctx, a)
    batch, (m, n) = a.sizes[:-2], a.sizes[-2:]
    k = sympy.Min(m, n)
    op = Linalg(LinalgOp.GEQRF, (contiguous(ctx, a, "a"),), numel(batch), m, n)
    packed = ctx.emit(op, batch + (m * n + k,), d, hint=f"{ctx.node_name}_qr")
    return (packed_part(packed, batch + (m, n), 0, lambda ij: ij[0] * n + ij[1]),
            packed_part(packed, batch + (k,), m * n, lambda j: j[0]))


def householder_product(ctx: LoweringContext, v: TensorValue, tau: TensorValue, cols
                        ) -> TensorValue:
    """The first `cols` columns of Q = H_0 ... H_{k-1}, k = tau's length (k <= v's columns)."""
    d = kernel_dtype(ctx, v, tau)
    batch = broadcast_shapes(v.sizes[:-2], tau.sizes[:-1])
    v = lower_expand(ctx, v, batch + v.sizes[-2:])
    tau = lower_expand(ctx, tau, batch + tau.sizes[-1:])
    m, ldv = v.sizes[-2:]
    op = Linalg(LinalgOp.HOUSEHOLDER_PRODUCT, (contiguous(ctx, v, "v"), contiguous(ctx, tau, "tau")),
                numel(batch), m, cols, rhs=tau.sizes[-1], stride=ldv)
    return ctx.emit(op, batch + (m, cols), d, hint=f"{ctx.node_name}_q")


def upper_triangle(ctx: LoweringContext, r: TensorValue, rows) -> TensorValue:
    """The first `rows` rows of r with zeros below the diagonal."""
    b = r.ndim - 2
    sizes = r.sizes[:-2] + (rows, r.sizes[-1])
    part = remap(r, sizes, index_vars(b + 2))
    i, j = (IndexValue(index_vars(b + 2)[b + t], DType.int64) for t in range(2))
    body = Where(Binary(BinaryOp.LE, i, j, DType.bool), part.body, constant(0, r.dtype), r.dtype)
    return ctx.pointwise(body, sizes, hint=f"{ctx.node_name}_r")


@register_lowering(aten.geqrf.default, family=FAMILY)
def lower_geqrf(ctx, a):
    return geqrf(ctx, a)


@register_lowering(aten.linalg_qr.default, family=FAMILY)
def lower_linalg_qr(ctx, a, mode="reduced"):
    if mode not in ("reduced", "complete", "r"):
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"with mode {mode!r}")
    return qr(ctx, a, complete=mode == "complete", with_q=mode != "r")


@register_lowering(aten.qr.default, family=FAMILY)
def lower_qr(ctx, a, some=True):
    return qr(ctx, a, complete=not some, with_q=True)


def qr(ctx: LoweringContext, a: TensorValue, complete: bool, with_q: bool) -> tuple:
    m, n = a.sizes[-2:]
    k = sympy.Min(m, n)
    v, tau = geqrf(ctx, a)
    r = upper_triangle(ctx, v, m if complete else k)
    if not with_q:  # mode "r": Q is an empty tensor, as eager's
        q_out = ctx.outputs[0]
        assert q_out is not None
        sizes, dtype = q_out
        return ctx.pointwise(constant(0, dtype), sizes, hint=f"{ctx.node_name}_q"), r
    return householder_product(ctx, v, tau, m if complete else k), r


@register_lowering(aten.linalg_householder_product.default, family=FAMILY)
def lower_householder_product(ctx, v, tau):
    return householder_product(ctx, v, tau, v.sizes[-1])


@register_lowering(aten.ormqr.default, family=FAMILY)
def lower_ormqr(ctx, v, tau, c, left=True, transpose=False):
    d = kernel_dtype(ctx, v, tau, c)
    batch = broadcast_shapes(v.sizes[:-2], tau.sizes[:-1], c.sizes[:-2])
    v = lower_expand(ctx, v, batch + v.sizes[-2:])
    tau = lower_expand(ctx, tau, batch + tau.sizes[-1:])
    c = lower_expand(ctx, c, batch + c.sizes[-2:])
    k = tau.sizes[-1]
    # the kernel reads the k reflector columns of v [rows, k]
    v = remap(v, v.sizes[:-1] + (k,), index_vars(v.ndim))
    m, n = c.sizes[-2:]
    op = Linalg(LinalgOp.ORMQR, (contiguous(ctx, v, "v"), contiguous(ctx, tau, "tau"),
                                 contiguous(ctx, c, "c")), numel(batch), m, n, rhs=k,
                left=left, trans=transpose)
    return ctx.emit(op, batch + (m, n), d, hint=f"{ctx.node_name}_out")
