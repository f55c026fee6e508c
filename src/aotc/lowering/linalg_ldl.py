"""Symmetric indefinite LDL^T with Bunch-Kaufman pivoting on the shipped kernels
(kernels/linalg_ldl.cpp, LAPACK's sytf2 / sytrs): linalg.ldl_factor_ex (what ldl_factor
decomposes into) and linalg.ldl_solve, with eager's LD and pivots. The matrices are real,
so `hermitian` changes nothing."""
from __future__ import annotations

import torch

from ..dtypes import DType
from ..ir.expr import cast
from ..ir.linalg import Linalg, LinalgOp
from ..ir.symbols import numel
from .context import LoweringContext, TensorValue
from .linalg_matrices import (
    broadcast_batch,
    check_info_if,
    contiguous,
    kernel_dtype,
    packed_part,
    require_square,
)
from .registry import register_lowering
from .views import lower_expand

aten = torch.ops.aten
FAMILY = "linalg"
I32 = DType.int32


@register_lowering(aten.linalg_ldl_factor_ex.default, family=FAMILY)
def lower_ldl_factor_ex(ctx: LoweringContext, a: TensorValue, *, hermitian=False,
                        check_errors=False):
    d = kernel_dtype(ctx, a)
    require_square(ctx, a)
    batch, n = a.sizes[:-2], a.sizes[-1]
    op = Linalg(LinalgOp.LDL_FACTOR, (contiguous(ctx, a, "a"),), numel(batch), n)
    packed = ctx.emit(op, batch + (n * n + n + 1,), d, hint=f"{ctx.node_name}_ldl")
    info = packed_part(packed, batch, n * n + n, lambda _: 0, I32)
    check_info_if(ctx, info, check_errors)
    return (packed_part(packed, batch + (n, n), 0, lambda ij: ij[0] * n + ij[1]),
            packed_part(packed, batch + (n,), n * n, lambda j: j[0], I32), info)


@register_lowering(aten.linalg_ldl_solve.default, family=FAMILY)
def lower_ldl_solve(ctx: LoweringContext, ld: TensorValue, pivots: TensorValue,
                    b: TensorValue, *, hermitian=False):
    d = kernel_dtype(ctx, ld, b)
    ld, b, batch = broadcast_batch(ctx, ld, b)
    pivots = lower_expand(ctx, pivots, batch + pivots.sizes[-1:])
    if pivots.dtype is not I32:
        pivots = TensorValue(pivots.sizes, I32, cast(pivots.body, I32))
    n, k = b.sizes[-2:]
    op = Linalg(LinalgOp.LDL_SOLVE, (contiguous(ctx, ld, "ld"), contiguous(ctx, pivots, "pivots"),
                                     contiguous(ctx, b, "b")), numel(batch), n, rhs=k)
    return ctx.emit(op, batch + (n, k), d, hint=f"{ctx.node_name}_x")
