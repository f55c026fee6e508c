"""Symmetric eigen decomposition on the shipped kernel (kernels/linalg.cpp, cyclic Jacobi):
eigh and eigvalsh. Eigenvalues come ascending as eager's; an eigenvector is defined up to
its sign, and aotc's has its largest component positive (eager's follows LAPACK's
algorithm), so results agree with eager up to that sign, as OpInfo compares them."""
from __future__ import annotations

import torch

from ..ir.expr import constant
from ..ir.linalg import Linalg, LinalgOp
from ..ir.symbols import numel
from .context import LoweringContext, TensorValue
from .linalg_matrices import contiguous, kernel_dtype, packed_part, transposed
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "linalg"


def eigh(ctx: LoweringContext, a: TensorValue, upper: bool) -> tuple[TensorValue, TensorValue]:
    d = kernel_dtype(ctx, a)
    batch, n = a.sizes[:-2], a.sizes[-1]
    source = transposed(a) if upper else a  # the upper triangle: the lower one of A^T
    op = Linalg(LinalgOp.EIGH, (contiguous(ctx, source, "a"),), numel(batch), n)
    packed = ctx.emit(op, batch + (n + n * n,), d, hint=f"{ctx.node_name}_eigh")
    return (packed_part(packed, batch + (n,), 0, lambda j: j[0]),
            packed_part(packed, batch + (n, n), n, lambda ij: ij[0] * n + ij[1]))


@register_lowering(aten._linalg_eigh.default, family=FAMILY)
def lower_eigh(ctx, a, UPLO="L", compute_v=True):  # noqa: N803 - the schema's name
    values, vectors = eigh(ctx, a, UPLO.upper() == "U")
    if compute_v:
        return values, vectors
    sizes, dtype = ctx.outputs[1]  # eager returns an empty tensor
    return values, ctx.pointwise(constant(0, dtype), sizes, hint=f"{ctx.node_name}_none")
