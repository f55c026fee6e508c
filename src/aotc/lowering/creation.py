"""Tensor creation: full/zeros/ones/arange and their *_like / new_* forms."""
from __future__ import annotations

import torch

from ..dtypes import DType
from ..ir.expr import Binary, BinaryOp, IndexValue, cast, constant
from ..ir.symbols import index_var
from .context import LoweringContext
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "creation"


def _fill(ctx: LoweringContext, value):
    return ctx.pointwise(constant(value, ctx.out_dtype))


@register_lowering(aten.full.default, family=FAMILY)
def lower_full(ctx, size, fill_value, **kwargs):
    return _fill(ctx, fill_value)


@register_lowering(aten.zeros.default, aten.empty.memory_format, aten.zeros_like.default,
                   aten.empty_like.default, aten.new_zeros.default, aten.new_empty.default,
                   family=FAMILY)
def lower_zeros(ctx, *args, **kwargs):
    return _fill(ctx, 0)


@register_lowering(aten.ones.default, aten.ones_like.default, aten.new_ones.default,
                   family=FAMILY)
def lower_ones(ctx, *args, **kwargs):
    return _fill(ctx, 1)


@register_lowering(aten.full_like.default, family=FAMILY)
def lower_full_like(ctx, x, fill_value, **kwargs):
    return _fill(ctx, fill_value)


@register_lowering(aten.new_full.default, family=FAMILY)
def lower_new_full(ctx, x, size, fill_value, **kwargs):
    return _fill(ctx, fill_value)


@register_lowering(aten.scalar_tensor.default, family=FAMILY)
def lower_scalar_tensor(ctx, value, **kwargs):
    return _fill(ctx, value)


@register_lowering(aten.arange.default, aten.arange.start, aten.arange.start_step, family=FAMILY)
def lower_arange(ctx, *args, **kwargs):
    nums = [a for a in args if not isinstance(a, (torch.dtype, torch.device, torch.layout))]
    start, step = (0, 1) if len(nums) == 1 else (nums[0], nums[2] if len(nums) > 2 else 1)
    d = ctx.out_dtype
    # torch steps in the widest type of the kind, then rounds once
    wide = DType.float64 if d.is_floating else DType.int64
    pos = cast(IndexValue(index_var(0), DType.int64), wide)
    val = Binary(BinaryOp.ADD, constant(start, wide),
                 Binary(BinaryOp.MUL, pos, constant(step, wide), wide), wide)
    return ctx.pointwise(cast(val, d))
