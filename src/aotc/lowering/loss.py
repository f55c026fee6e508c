"""Losses whose PyTorch kernel rounds to the input's type after each step (half inputs), so
a rule that widened the whole formula to float32 would differ: soft_margin_loss. Losses that
decompose into ordinary ops are left to their decompositions."""
from __future__ import annotations

import torch

from ..ir.expr import Binary, BinaryOp, Unary, UnaryOp
from .common import broadcast_shapes, operand
from .opmath import lower_in_float
from .reduction import lower_mean, lower_sum
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "nn"
_NONE, _MEAN = 0, 1  # at::Reduction: None, Mean, Sum


@register_lowering(aten.soft_margin_loss.default, family=FAMILY, in_storage_type=True)
def lower_soft_margin_loss(ctx, x, target, reduction=_MEAN):
    """log1p(exp(-x * target)), each step rounded to the input's type as torch computes it in
    place in the output (a half exp overflows to inf where a float one would not), then the
    reduction in float32 as any half mean or sum."""
    d = ctx.out_dtype
    sizes = broadcast_shapes(x.sizes, target.sizes)
    neg = Unary(UnaryOp.NEG, operand(x, d, sizes), d)
    body = Unary(UnaryOp.LOG1P, Unary(UnaryOp.EXP, Binary(BinaryOp.MUL, neg, operand(
        target, d, sizes), d), d), d)
    loss = ctx.pointwise(body, sizes)
    if reduction == _NONE:
        return loss
    return lower_in_float(lower_mean if reduction == _MEAN else lower_sum, ctx, (loss,), {})
