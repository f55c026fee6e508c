"""The matrix exponential on the shipped kernel (kernels/linalg_expm.cpp: scaling and
squaring in double): linalg.matrix_exp and torch.matrix_exp."""
from __future__ import annotations

import torch

from ..ir.linalg import Linalg, LinalgOp
from ..ir.symbols import numel
from .linalg_lu import contiguous, kernel_dtype
from .registry import register_lowering

aten = torch.ops.aten


@register_lowering(aten.linalg_matrix_exp.default, family="linalg")
def lower_matrix_exp(ctx, a):
    d = kernel_dtype(ctx, a)
    batch, n = a.sizes[:-2], a.sizes[-1]
    op = Linalg(LinalgOp.MATRIX_EXP, (contiguous(ctx, a, "a"),), numel(batch), n)
    return ctx.emit(op, a.sizes, d, hint=f"{ctx.node_name}_exp")
