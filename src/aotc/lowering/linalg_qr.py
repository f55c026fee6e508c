"""Householder QR on the shipped kernels (kernels/linalg.cpp), with LAPACK's conventions so
that the factors are the ones eager computes: geqrf, linalg_qr (reduced, complete, r), qr,
householder_product (orgqr / ungqr) and ormqr (ormqr / unmqr). Complex matrices come as
their pairs (these rules are `on_pairs`): reflectors H = I - tau v v^H with a complex tau,
R with a real diagonal, and ormqr's `transpose` the conjugate transpose Q^H, as eager's."""
from __future__ import annotations

import sympy
import torch

from ..errors import UnsupportedOperatorError
from ..ir.expr import BinaryOp, constant
from ..ir.linalg import Linalg, LinalgOp
from ..ir.symbols import index_vars, numel
from .common import broadcast_shapes
from .context import LoweringContext, TensorValue
from .linalg_matrices import (
    complex_matrices,
    contiguous,
    kernel_dtype,
    matrix_dims,
    packed_part,
    triangle,
)
from .registry import register_lowering
from .views import lower_expand, remap

aten = torch.ops.aten
FAMILY = "linalg"


def _pair_dim(pairs: bool) -> tuple:
    """The trailing (2,) of a tensor of pairs, () when real."""
    return (sympy.Integer(2),) if pairs else ()


def geqrf(ctx: LoweringContext, a: TensorValue, pairs: bool) -> tuple[TensorValue, TensorValue]:
    """(R and the reflectors [*, m, n], tau [*, min(m, n)]) as views of the kernel's buffer."""
    d = kernel_dtype(ctx, a)
    t = matrix_dims(pairs)
    batch, m, n = a.sizes[:-t], a.sizes[-t], a.sizes[-t + 1]
    k = sympy.Min(m, n)
    op = Linalg(LinalgOp.GEQRF, (contiguous(ctx, a, "a"),), numel(batch), m, n, complex=pairs)
    packed = ctx.emit(op, batch + (m * n + k,) + _pair_dim(pairs), d, hint=f"{ctx.node_name}_qr")
    return (packed_part(packed, batch + (m, n), 0, lambda ij: ij[0] * n + ij[1], pairs=pairs),
            packed_part(packed, batch + (k,), m * n, lambda j: j[0], pairs=pairs))


def _batched(ctx: LoweringContext, pairs: bool, *xs: tuple[TensorValue, int]
             ) -> tuple[tuple, list[TensorValue]]:
    """The broadcast batch of the tensors (x, its trailing dims that are not the batch,
    the pair not counted), each x expanded to it."""
    p = 1 if pairs else 0
    batch = broadcast_shapes(*(x.sizes[:-(dims + p)] for x, dims in xs))
    return batch, [lower_expand(ctx, x, batch + x.sizes[-(dims + p):]) for x, dims in xs]


def householder_product(ctx: LoweringContext, v: TensorValue, tau: TensorValue, cols,
                        pairs: bool) -> TensorValue:
    """The first `cols` columns of Q = H_0 ... H_{k-1}, k = tau's length (k <= v's columns)."""
    d = kernel_dtype(ctx, v, tau)
    batch, (v, tau) = _batched(ctx, pairs, (v, 2), (tau, 1))
    t = matrix_dims(pairs)
    m, ldv = v.sizes[-t], v.sizes[-t + 1]
    op = Linalg(LinalgOp.HOUSEHOLDER_PRODUCT, (contiguous(ctx, v, "v"), contiguous(ctx, tau, "tau")),
                numel(batch), m, cols, rhs=tau.sizes[-t + 1], stride=ldv, complex=pairs)
    return ctx.emit(op, batch + (m, cols) + _pair_dim(pairs), d, hint=f"{ctx.node_name}_q")


@register_lowering(aten.geqrf.default, family=FAMILY, on_pairs=True)
def lower_geqrf(ctx, a):
    return geqrf(ctx, a, complex_matrices(ctx))


@register_lowering(aten.linalg_qr.default, family=FAMILY, on_pairs=True)
def lower_linalg_qr(ctx, a, mode="reduced"):
    if mode not in ("reduced", "complete", "r"):
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"with mode {mode!r}")
    return qr(ctx, a, complete=mode == "complete", with_q=mode != "r")


@register_lowering(aten.qr.default, family=FAMILY, on_pairs=True)
def lower_qr(ctx, a, some=True):
    return qr(ctx, a, complete=not some, with_q=True)


def qr(ctx: LoweringContext, a: TensorValue, complete: bool, with_q: bool) -> tuple:
    pairs = complex_matrices(ctx)
    t = matrix_dims(pairs)
    m, n = a.sizes[-t], a.sizes[-t + 1]
    k = sympy.Min(m, n)
    v, tau = geqrf(ctx, a, pairs)
    # R: the first m (k) rows of the factored matrix with zeros below the diagonal
    r = triangle(ctx, v, (m if complete else k, n), BinaryOp.LE, pairs=pairs)
    if not with_q:  # mode "r": Q is an empty tensor, as eager's
        q_out = ctx.outputs[0]
        assert q_out is not None
        sizes, dtype = q_out
        return ctx.pointwise(constant(0, dtype), sizes, hint=f"{ctx.node_name}_q"), r
    return householder_product(ctx, v, tau, m if complete else k, pairs), r


@register_lowering(aten.linalg_householder_product.default, family=FAMILY, on_pairs=True)
def lower_householder_product(ctx, v, tau):
    pairs = complex_matrices(ctx)
    return householder_product(ctx, v, tau, v.sizes[-matrix_dims(pairs) + 1], pairs)


@register_lowering(aten.ormqr.default, family=FAMILY, on_pairs=True)
def lower_ormqr(ctx, v, tau, c, left=True, transpose=False):
    pairs = complex_matrices(ctx)
    d = kernel_dtype(ctx, v, tau, c)
    batch, (v, tau, c) = _batched(ctx, pairs, (v, 2), (tau, 1), (c, 2))
    t = matrix_dims(pairs)
    k = tau.sizes[-t + 1]
    # the kernel reads the k reflector columns of v [rows, k]
    v_sizes = list(v.sizes)
    v_sizes[-t + 1] = k
    v = remap(v, tuple(v_sizes), index_vars(v.ndim))
    m, n = c.sizes[-t], c.sizes[-t + 1]
    # transpose: Q^T of a real Q, the conjugate transpose Q^H of a complex one (as eager's)
    op = Linalg(LinalgOp.ORMQR, (contiguous(ctx, v, "v"), contiguous(ctx, tau, "tau"),
                                 contiguous(ctx, c, "c")), numel(batch), m, n, rhs=k,
                left=left, trans=transpose and not pairs, adjoint=transpose and pairs,
                complex=pairs)
    return ctx.emit(op, c.sizes, d, hint=f"{ctx.node_name}_out")
