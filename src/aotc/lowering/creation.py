"""Tensor creation: full/zeros/ones/arange/linspace/logspace and their *_like / new_* forms,
and the triangle indices (triu_indices, tril_indices)."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import Binary, BinaryOp, Constant, IndexValue, Node, Where, cast, constant
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
                   aten.empty_strided.default, aten.new_empty_strided.default,
                   aten.empty_permuted.default, family=FAMILY)
def lower_zeros(ctx, *args, **kwargs):
    """Zeros, and the empty forms (whose values are undefined until written). aotc lays
    every buffer out contiguously, so the strides given to empty_strided and
    empty_permuted are not kept: values read by index do not depend on them, and
    as_strided reads any whole buffer as contiguous storage."""
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
    val = Binary(BinaryOp.ADD, _number(start, wide),
                 Binary(BinaryOp.MUL, pos, _number(step, wide), wide), wide)
    return ctx.pointwise(cast(val, d))


def _number(value, dtype: DType) -> Node:
    """A start or step: a constant, or an integer expression over the shape symbols and
    .item() values (arange(n, 2 * n)), computed at run time."""
    if isinstance(value, sympy.Basic) and not value.is_number:
        return cast(IndexValue(value, DType.int64), dtype)
    return constant(value, dtype)


def _spaced(ctx: LoweringContext, start, end, steps: int, base=None):
    """Evenly spaced values (or `base` to their power) as PyTorch's CPU kernel computes
    them: the first half counts up from start, the second half down from end, with the
    step in the result's type (double for integer results), truncated to integers."""
    d = ctx.out_dtype
    f64 = DType.float64
    # the ends as doubles (a symbolic end is computed at run time); integer results convert
    # them to the integer type first
    start, end = (cast(constant(v, f64 if d.is_floating else DType.int64), f64)
                  for v in (start, end))
    t = DType.float64 if (not d.is_floating or base is not None) else d.compute
    step_t = DType.float64 if not d.is_floating else d.compute
    if steps == 1:
        val: Node = cast(start, t)
    else:
        if isinstance(start, Constant) and isinstance(end, Constant):
            step = constant((end.value - start.value) / (steps - 1), step_t)
        else:
            step = cast(Binary(BinaryOp.DIV, Binary(BinaryOp.SUB, end, start, f64),
                               constant(steps - 1, f64), f64), step_t)
        i = IndexValue(index_var(0), DType.int64)
        up = Binary(BinaryOp.MUL, step, cast(i, step_t), step_t)
        back = Binary(BinaryOp.MUL, step, cast(Binary(BinaryOp.SUB, constant(steps - 1, DType.int64),
                                                        i, DType.int64), step_t), step_t)
        first = Binary(BinaryOp.ADD, cast(start, step_t), up, step_t)
        second = Binary(BinaryOp.SUB, cast(end, step_t), back, step_t)
        half = Binary(BinaryOp.LT, i, constant(steps // 2, DType.int64), DType.bool)
        val = cast(Where(half, first, second, step_t), t)
    if base is not None:
        val = Binary(BinaryOp.POW, constant(float(base), t), val, t)
    return ctx.pointwise(cast(val, d))


@register_lowering(aten.linspace.default, family=FAMILY)
def lower_linspace(ctx, start, end, steps, **kwargs):
    return _spaced(ctx, start, end, int(steps))


@register_lowering(aten.logspace.default, family=FAMILY)
def lower_logspace(ctx, start, end, steps, base=10.0, **kwargs):
    return _spaced(ctx, start, end, int(steps), base)


@register_lowering(aten.eye.default, aten.eye.m, family=FAMILY)
def lower_eye(ctx, n, m=None, **kwargs):
    """1 on the diagonal (row == column), 0 elsewhere."""
    i, j = (IndexValue(index_var(k), DType.int64) for k in range(2))
    return ctx.pointwise(cast(Binary(BinaryOp.EQ, i, j, DType.bool), ctx.out_dtype))


@register_lowering(aten.triu_indices.default, aten.tril_indices.default, family=FAMILY)
def lower_triangle_indices(ctx, row, col, offset=0, **kwargs):
    """The (row, col) pairs of the upper (triu) or lower (tril) triangle above or below
    diagonal `offset`, in row-major order, folded into a constant: its sizes are static."""
    if not all(isinstance(v, int) for v in (row, col, offset)):
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       "the triangle's sizes must be known when compiling")
    r, c = torch.meshgrid(torch.arange(row), torch.arange(col), indexing="ij")
    keep = (c - r >= offset) if "triu" in ctx.target else (c - r <= offset)
    pairs = torch.stack([r[keep], c[keep]])
    if pairs.numel() == 0:
        return _fill(ctx, 0)
    return ctx.constant(pairs.to(getattr(torch, ctx.out_dtype.name)), "pairs")
