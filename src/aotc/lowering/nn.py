"""Neural-network ops kept whole by torch.export: layer_norm (for now)."""
from __future__ import annotations

import torch

from ..ir.expr import Binary, BinaryOp, Unary, UnaryOp, constant
from .common import operand
from .reduction import lower_mean_keep, variance
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "nn"


@register_lowering(aten.layer_norm.default, family=FAMILY)
def lower_layer_norm(ctx, x, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn=True):
    d = ctx.out_dtype
    dims = list(range(x.ndim - len(normalized_shape), x.ndim))
    mean = lower_mean_keep(ctx, x, dims, d)
    var = variance(ctx, x, dims, 0, True, d, mean)
    out = ctx.out_sizes
    rstd = Unary(UnaryOp.RSQRT, Binary(BinaryOp.ADD, operand(var, d, out), constant(eps, d), d), d)
    y = Binary(BinaryOp.MUL, Binary(BinaryOp.SUB, operand(x, d, out), operand(mean, d, out), d),
               rstd, d)
    if weight is not None:
        y = Binary(BinaryOp.MUL, y, operand(weight, d, out), d)
    if bias is not None:
        y = Binary(BinaryOp.ADD, y, operand(bias, d, out), d)
    return ctx.pointwise(y)
