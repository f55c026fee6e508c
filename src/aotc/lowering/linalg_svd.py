"""Singular value decomposition on the shipped kernel (kernels/linalg_svd.cpp, one-sided
Jacobi): _linalg_svd, which linalg.svd, svd, svdvals, matrix_rank, matrix_norm (2 and nuc)
and cond decompose into. Singular values come descending as eager's; a pair of singular
vectors is defined up to a common sign, and aotc's left vector has its largest component
positive (eager's follows LAPACK's algorithm), so results agree with eager up to that sign,
as OpInfo compares them. Complex matrices come as their pairs (the rule is `on_pairs`):
U and Vh complex (a pair defined up to a common unit factor; aotc's left vector of the
tall orientation has its largest-magnitude component real and positive), S real."""
from __future__ import annotations

import sympy
import torch

from ..ir.expr import constant
from ..ir.linalg import Linalg, LinalgOp
from ..ir.symbols import numel
from .context import LoweringContext, TensorValue
from .linalg_matrices import complex_matrices, contiguous, kernel_dtype, matrix_dims, packed_part
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "linalg"


def svd(ctx: LoweringContext, a: TensorValue, full: bool, vectors: bool, pairs: bool = False
        ) -> tuple:
    """(U, S, Vh) of a [*, m, n] (of pairs) as views of the kernel's buffer; U and Vh None
    without `vectors`."""
    d = kernel_dtype(ctx, a)
    t = matrix_dims(pairs)
    batch, m, n = a.sizes[:-t], a.sizes[-t], a.sizes[-t + 1]
    k = sympy.Min(m, n)
    mu, nv = (m, n) if full else (k, k)
    each = k + (m * mu + nv * n if vectors else 0)
    op = Linalg(LinalgOp.SVD, (contiguous(ctx, a, "a"),), numel(batch), m, n, full=full,
                vectors=vectors, complex=pairs)
    packed = ctx.emit(op, batch + (each,) + ((sympy.Integer(2),) if pairs else ()), d,
                      hint=f"{ctx.node_name}_svd")
    s = packed_part(packed, batch + (k,), 0, lambda j: j[0], real_part=pairs)
    if not vectors:
        return None, s, None
    return (packed_part(packed, batch + (m, mu), k, lambda ij: ij[0] * mu + ij[1], pairs=pairs),
            s, packed_part(packed, batch + (nv, n), k + m * mu, lambda ij: ij[0] * n + ij[1],
                           pairs=pairs))


@register_lowering(aten._linalg_svd.default, family=FAMILY, on_pairs=True)
def lower_linalg_svd(ctx, a, full_matrices=False, compute_uv=True, driver=None):
    u, s, vh = svd(ctx, a, full_matrices, compute_uv, complex_matrices(ctx))
    if compute_uv:
        return u, s, vh
    empty = []
    for t in (0, 2):  # eager returns empty tensors for U and Vh
        sizes, dtype = ctx.outputs[t]
        empty.append(ctx.pointwise(constant(0, dtype), sizes, hint=f"{ctx.node_name}_none"))
    return empty[0], s, empty[1]
