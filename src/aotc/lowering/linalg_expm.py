"""The matrix exponential on the shipped kernel (kernels/linalg_expm.cpp: scaling and
squaring in double): linalg.matrix_exp and torch.matrix_exp, of real matrices or complex
ones as their pairs (`on_pairs`)."""
from __future__ import annotations

import torch

from ..ir.linalg import Linalg, LinalgOp
from ..ir.symbols import numel
from .linalg_matrices import complex_matrices, contiguous, kernel_dtype, matrix_dims
from .registry import register_lowering

aten = torch.ops.aten


@register_lowering(aten.linalg_matrix_exp.default, family="linalg", on_pairs=True)
def lower_matrix_exp(ctx, a):
    d = kernel_dtype(ctx, a)
    pairs = complex_matrices(ctx)
    t = matrix_dims(pairs)
    batch, n = a.sizes[:-t], a.sizes[-t]
    op = Linalg(LinalgOp.MATRIX_EXP, (contiguous(ctx, a, "a"),), numel(batch), n, complex=pairs)
    return ctx.emit(op, a.sizes, d, hint=f"{ctx.node_name}_exp")
