"""Symmetric indefinite LDL^T with Bunch-Kaufman pivoting on the shipped kernels
(kernels/linalg_ldl.cpp, LAPACK's sytf2 / sytrs): linalg.ldl_factor_ex (what ldl_factor
decomposes into) and linalg.ldl_solve, with eager's LD and pivots. For real matrices
`hermitian` changes nothing; complex ones (as their pairs: these rules are `on_pairs`) are
complex symmetric (A = L D L^T, zsytf2 / zsytrs), or Hermitian with `hermitian`
(A = L D L^H, zhetf2 / zhetrs)."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..ir.linalg import Linalg, LinalgOp
from ..ir.symbols import numel
from .context import LoweringContext, TensorValue
from .linalg_matrices import (
    broadcast_batch,
    check_info_if,
    complex_matrices,
    contiguous,
    int32_pivots,
    kernel_dtype,
    matrix_dims,
    packed_part,
    require_square,
)
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "linalg"
I32 = DType.int32


@register_lowering(aten.linalg_ldl_factor_ex.default, family=FAMILY, on_pairs=True)
def lower_ldl_factor_ex(ctx: LoweringContext, a: TensorValue, *, hermitian=False,
                        check_errors=False):
    d = kernel_dtype(ctx, a)
    pairs = complex_matrices(ctx)
    require_square(ctx, a, pairs)
    t = matrix_dims(pairs)
    batch, n = a.sizes[:-t], a.sizes[-t]
    op = Linalg(LinalgOp.LDL_FACTOR, (contiguous(ctx, a, "a"),), numel(batch), n,
                complex=pairs, hermitian=pairs and bool(hermitian))
    sizes = batch + (n * n + n + 1,) + ((sympy.Integer(2),) if pairs else ())
    packed = ctx.emit(op, sizes, d, hint=f"{ctx.node_name}_ldl")
    info = packed_part(packed, batch, n * n + n, lambda _: 0, I32, real_part=pairs)
    check_info_if(ctx, info, check_errors)
    return (packed_part(packed, batch + (n, n), 0, lambda ij: ij[0] * n + ij[1], pairs=pairs),
            packed_part(packed, batch + (n,), n * n, lambda j: j[0], I32, real_part=pairs), info)


@register_lowering(aten.linalg_ldl_solve.default, family=FAMILY, on_pairs=True)
def lower_ldl_solve(ctx: LoweringContext, ld: TensorValue, pivots: TensorValue,
                    b: TensorValue, *, hermitian=False):
    d = kernel_dtype(ctx, ld, b)
    pairs = complex_matrices(ctx)
    ld, b, batch = broadcast_batch(ctx, ld, b, pairs)
    pivots = int32_pivots(ctx, pivots, batch)
    t = matrix_dims(pairs)
    n, k = b.sizes[-t], b.sizes[-t + 1]
    op = Linalg(LinalgOp.LDL_SOLVE, (contiguous(ctx, ld, "ld"), contiguous(ctx, pivots, "pivots"),
                                     contiguous(ctx, b, "b")), numel(batch), n, rhs=k,
                complex=pairs, hermitian=pairs and bool(hermitian))
    return ctx.emit(op, b.sizes, d, hint=f"{ctx.node_name}_x")
