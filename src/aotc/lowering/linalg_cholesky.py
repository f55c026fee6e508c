"""Cholesky and triangular solves on the shipped kernels (kernels/linalg.cpp): cholesky,
cholesky_ex, cholesky_solve, cholesky_inverse, solve_triangular, triangular_solve. As
LAPACK's, a factorization reads one triangle of its input (the lower one, the upper with
`upper`), a solve one triangle of its matrix. Complex matrices (as their pairs: these rules
are `on_pairs`) are Hermitian here: A = L L^H."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..ir.linalg import Linalg, LinalgOp
from ..ir.symbols import numel
from .context import LoweringContext, TensorValue
from .linalg_lu import Read, solve_flags
from .linalg_matrices import (
    adjoint,
    broadcast_batch,
    check_info,
    complex_matrices,
    contiguous,
    identity_like,
    kernel_dtype,
    matrix_dims,
    packed_part,
    transposed,
)
from .registry import register_lowering
from .views import lower_expand

aten = torch.ops.aten
FAMILY = "linalg"


def cholesky(ctx: LoweringContext, a: TensorValue, upper: bool, pairs: bool) -> tuple:
    """(the factor, int32 info): L with A = L L^H, or U with A = U^H U when `upper`."""
    d = kernel_dtype(ctx, a)
    t = matrix_dims(pairs)
    batch, n = a.sizes[:-t], a.sizes[-t]
    # U^H U = A reads A's upper triangle: the lower one of A^H, whose factor is U^H
    source = adjoint(ctx, a, pairs) if upper else a
    op = Linalg(LinalgOp.CHOLESKY, (contiguous(ctx, source, "a"),), numel(batch), n,
                complex=pairs)
    packed = ctx.emit(op, batch + (n * n + 1,) + ((sympy.Integer(2),) if pairs else ()), d,
                      hint=f"{ctx.node_name}_chol")
    factor = packed_part(packed, batch + (n, n), 0, lambda ij: ij[0] * n + ij[1], pairs=pairs)
    info = packed_part(packed, batch, n * n, lambda _: 0, DType.int32, real_part=pairs)
    return (adjoint(ctx, factor, pairs) if upper else factor), info


def triangular_solve(ctx: LoweringContext, a: TensorValue, b: TensorValue, lower: bool,
                     read: Read = Read.AS_IS, unit: bool = False, pairs: bool = False
                     ) -> TensorValue:
    """x [*, n, k] solving T x = b, T the lower (upper) triangle of a, read as `read`
    says; a and b broadcast over their batch dims."""
    d = kernel_dtype(ctx, a, b)
    a, b, batch = broadcast_batch(ctx, a, b, pairs)
    t = matrix_dims(pairs)
    n, k = b.sizes[-t], b.sizes[-t + 1]
    op = Linalg(LinalgOp.TRIANGULAR_SOLVE, (contiguous(ctx, a, "a"), contiguous(ctx, b, "b")),
                numel(batch), n, rhs=k, lower=lower, unit=unit, **solve_flags(read, pairs))
    return ctx.emit(op, b.sizes, d, hint=f"{ctx.node_name}_x")


@register_lowering(aten.linalg_cholesky_ex.default, family=FAMILY, on_pairs=True)
def lower_cholesky_ex(ctx, a, upper=False, check_errors=False):
    factor, info = cholesky(ctx, a, upper, complex_matrices(ctx))
    if check_errors:
        check_info(ctx, info, "linalg.cholesky_ex")
    return factor, info


@register_lowering(aten.cholesky.default, family=FAMILY, on_pairs=True)
def lower_cholesky(ctx, a, upper=False):
    factor, info = cholesky(ctx, a, upper, complex_matrices(ctx))
    check_info(ctx, info, "cholesky")
    return factor


@register_lowering(aten.linalg_solve_triangular.default, family=FAMILY, on_pairs=True)
def lower_solve_triangular(ctx, a, b, upper, left=True, unitriangular=False):
    pairs = complex_matrices(ctx)
    if left:
        return triangular_solve(ctx, a, b, not upper, unit=unitriangular, pairs=pairs)
    # x A = b  <=>  A^T x^T = b^T
    return transposed(triangular_solve(ctx, a, transposed(b, pairs), not upper, Read.TRANSPOSED,
                                       unitriangular, pairs), pairs)


@register_lowering(aten.triangular_solve.default, family=FAMILY, on_pairs=True)
def lower_triangular_solve(ctx, b, a, upper=True, transpose=False, unitriangular=False):
    pairs = complex_matrices(ctx)
    x = triangular_solve(ctx, a, b, not upper, Read.TRANSPOSED if transpose else Read.AS_IS,
                         unitriangular, pairs)
    t = matrix_dims(pairs)
    batch = x.sizes[:-t]
    sizes = batch + a.sizes[-t:]
    return x, ctx.pointwise(lower_expand(ctx, a, sizes).body, sizes, hint=f"{ctx.node_name}_a")


def cholesky_solve(ctx: LoweringContext, b: TensorValue, factor: TensorValue, upper: bool,
                   pairs: bool) -> TensorValue:
    """x solving A x = b from A's Cholesky factor (L L^H, or U^H U with `upper`)."""
    if upper:  # U^H y = b, then U x = y
        y = triangular_solve(ctx, factor, b, lower=False, read=Read.ADJOINT, pairs=pairs)
        return triangular_solve(ctx, factor, y, lower=False, pairs=pairs)
    y = triangular_solve(ctx, factor, b, lower=True, pairs=pairs)  # L y = b, then L^H x = y
    return triangular_solve(ctx, factor, y, lower=True, read=Read.ADJOINT, pairs=pairs)


@register_lowering(aten.cholesky_solve.default, family=FAMILY, on_pairs=True)
def lower_cholesky_solve(ctx, b, factor, upper=False):
    return cholesky_solve(ctx, b, factor, upper, complex_matrices(ctx))


@register_lowering(aten.cholesky_inverse.default, family=FAMILY, on_pairs=True)
def lower_cholesky_inverse(ctx, factor, upper=False):
    pairs = complex_matrices(ctx)
    kernel_dtype(ctx, factor)
    t = matrix_dims(pairs)
    eye = identity_like(ctx, factor.sizes[:-t], factor.sizes[-t], factor.dtype, pairs)
    return cholesky_solve(ctx, eye, factor, upper, pairs)
