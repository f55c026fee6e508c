"""Cholesky and triangular solves on the shipped kernels (kernels/linalg.cpp): cholesky,
cholesky_ex, cholesky_solve, cholesky_inverse, solve_triangular, triangular_solve. As
LAPACK's, a factorization reads one triangle of its input (the lower one, the upper with
`upper`), a solve one triangle of its matrix."""
from __future__ import annotations

import torch

from ..dtypes import DType
from ..ir.linalg import Linalg, LinalgOp
from ..ir.symbols import numel
from .context import LoweringContext, TensorValue
from .linalg_lu import (
    broadcast_batch,
    check_info,
    contiguous,
    identity_like,
    kernel_dtype,
    packed_part,
    transposed,
)
from .registry import register_lowering
from .views import lower_expand

aten = torch.ops.aten
FAMILY = "linalg"


def cholesky(ctx: LoweringContext, a: TensorValue, upper: bool) -> tuple:
    """(the factor, int32 info): L with A = L L^T, or U with A = U^T U when `upper`."""
    d = kernel_dtype(ctx, a)
    batch, n = a.sizes[:-2], a.sizes[-1]
    # U^T U = A reads A's upper triangle: the lower one of A^T, whose factor is U^T
    source = transposed(a) if upper else a
    op = Linalg(LinalgOp.CHOLESKY, (contiguous(ctx, source, "a"),), numel(batch), n)
    packed = ctx.emit(op, batch + (n * n + 1,), d, hint=f"{ctx.node_name}_chol")
    factor = packed_part(packed, batch + (n, n), 0, lambda ij: ij[0] * n + ij[1])
    info = packed_part(packed, batch, n * n, lambda _: 0, DType.int32)
    return (transposed(factor) if upper else factor), info


def triangular_solve(ctx: LoweringContext, a: TensorValue, b: TensorValue, lower: bool,
                     trans: bool = False, unit: bool = False) -> TensorValue:
    """x [*, n, k] solving T x = b, T the lower (upper) triangle of a, transposed with
    `trans`; a and b broadcast over their batch dims."""
    d = kernel_dtype(ctx, a, b)
    a, b, batch = broadcast_batch(ctx, a, b)
    n, k = b.sizes[-2:]
    op = Linalg(LinalgOp.TRIANGULAR_SOLVE, (contiguous(ctx, a, "a"), contiguous(ctx, b, "b")),
                numel(batch), n, rhs=k, lower=lower, trans=trans, unit=unit)
    return ctx.emit(op, batch + (n, k), d, hint=f"{ctx.node_name}_x")


@register_lowering(aten.linalg_cholesky_ex.default, family=FAMILY)
def lower_cholesky_ex(ctx, a, upper=False, check_errors=False):
    factor, info = cholesky(ctx, a, upper)
    if check_errors:
        check_info(ctx, info, "linalg.cholesky_ex")
    return factor, info


@register_lowering(aten.cholesky.default, family=FAMILY)
def lower_cholesky(ctx, a, upper=False):
    factor, info = cholesky(ctx, a, upper)
    check_info(ctx, info, "cholesky")
    return factor


@register_lowering(aten.linalg_solve_triangular.default, family=FAMILY)
def lower_solve_triangular(ctx, a, b, upper, left=True, unitriangular=False):
    if left:
        return triangular_solve(ctx, a, b, not upper, unit=unitriangular)
    # x A = b  <=>  A^T x^T = b^T
    return transposed(triangular_solve(ctx, a, transposed(b), not upper, True, unitriangular))


@register_lowering(aten.triangular_solve.default, family=FAMILY)
def lower_triangular_solve(ctx, b, a, upper=True, transpose=False, unitriangular=False):
    x = triangular_solve(ctx, a, b, not upper, transpose, unitriangular)
    batch = x.sizes[:-2]
    return x, ctx.pointwise(lower_expand(ctx, a, batch + a.sizes[-2:]).body,
                            batch + a.sizes[-2:], hint=f"{ctx.node_name}_a")


def cholesky_solve(ctx: LoweringContext, b: TensorValue, factor: TensorValue, upper: bool
                   ) -> TensorValue:
    """x solving A x = b from A's Cholesky factor (L L^T, or U^T U with `upper`)."""
    if upper:  # U^T y = b, then U x = y
        y = triangular_solve(ctx, factor, b, lower=False, trans=True)
        return triangular_solve(ctx, factor, y, lower=False)
    y = triangular_solve(ctx, factor, b, lower=True)  # L y = b, then L^T x = y
    return triangular_solve(ctx, factor, y, lower=True, trans=True)


@register_lowering(aten.cholesky_solve.default, family=FAMILY)
def lower_cholesky_solve(ctx, b, factor, upper=False):
    return cholesky_solve(ctx, b, factor, upper)


@register_lowering(aten.cholesky_inverse.default, family=FAMILY)
def lower_cholesky_inverse(ctx, factor, upper=False):
    kernel_dtype(ctx, factor)
    eye = identity_like(ctx, factor.sizes[:-2], factor.sizes[-1], factor.dtype)
    return cholesky_solve(ctx, eye, factor, upper)
