"""Symmetric and Hermitian eigen decomposition on the shipped kernel (kernels/linalg.cpp,
cyclic Jacobi): eigh and eigvalsh. Eigenvalues come ascending as eager's, real also for a
complex (Hermitian) matrix, which comes as its pairs (these rules are `on_pairs`). An
eigenvector is defined up to its sign (a unit phase when complex), and aotc's has its
largest component real and positive (eager's follows LAPACK's algorithm), so results agree
with eager up to that sign or phase, as OpInfo compares them."""
from __future__ import annotations

import sympy
import torch

from ..ir.expr import constant
from ..ir.linalg import Linalg, LinalgOp
from ..ir.symbols import numel
from .context import LoweringContext, TensorValue
from .linalg_matrices import (
    adjoint,
    complex_matrices,
    contiguous,
    kernel_dtype,
    matrix_dims,
    packed_part,
)
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "linalg"


def eigh(ctx: LoweringContext, a: TensorValue, upper: bool, pairs: bool
         ) -> tuple[TensorValue, TensorValue]:
    """(the real eigenvalues [*, n], the eigenvectors [*, n, n] as columns)."""
    d = kernel_dtype(ctx, a)
    t = matrix_dims(pairs)
    batch, n = a.sizes[:-t], a.sizes[-t]
    # the upper triangle: the lower one of A^H (A^T when real)
    source = adjoint(ctx, a, pairs) if upper else a
    op = Linalg(LinalgOp.EIGH, (contiguous(ctx, source, "a"),), numel(batch), n, complex=pairs)
    packed = ctx.emit(op, batch + (n + n * n,) + ((sympy.Integer(2),) if pairs else ()), d,
                      hint=f"{ctx.node_name}_eigh")
    # a complex kernel writes each eigenvalue as (value, 0): its real part
    return (packed_part(packed, batch + (n,), 0, lambda j: j[0], real_part=pairs),
            packed_part(packed, batch + (n, n), n, lambda ij: ij[0] * n + ij[1], pairs=pairs))


@register_lowering(aten._linalg_eigh.default, family=FAMILY, on_pairs=True)
def lower_eigh(ctx, a, UPLO="L", compute_v=True):  # noqa: N803 - the schema's name
    values, vectors = eigh(ctx, a, UPLO.upper() == "U", complex_matrices(ctx))
    if compute_v:
        return values, vectors
    sizes, dtype = ctx.outputs[1]  # eager returns an empty tensor
    return values, ctx.pointwise(constant(0, dtype), sizes, hint=f"{ctx.node_name}_none")
