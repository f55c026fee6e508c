"""embedding_bag: sums, means or maxima of embedding rows over bags of indices (the bags given
by offsets, data read at run time), with per-sample weights and a padding index.
embedding_renorm, the row renormalization max_norm asks for, lives in indexing.py."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import (
    Binary,
    BinaryOp,
    IndexValue,
    IndirectLoad,
    Load,
    Node,
    Where,
    cast,
    constant,
    indirect_var,
)
from ..ir.nodes import ReduceType, Reduction
from ..ir.symbols import index_var, reduction_var
from .context import LoweringContext, TensorValue
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "indexing"
SUM, MEAN, MAX = 0, 1, 2


def _row(weight: TensorValue, index: Node, column) -> IndirectLoad:
    """weight[index, column] with `index` an int64 value (checked against the rows)."""
    inner = weight.load((indirect_var(0), column))
    assert isinstance(inner, Load)
    return IndirectLoad(inner.buffer, inner.index, (index,), (weight.sizes[0],), weight.dtype)


def _row1d(x: TensorValue, index: Node) -> IndirectLoad:
    inner = x.load((indirect_var(0),))
    assert isinstance(inner, Load)
    return IndirectLoad(inner.buffer, inner.index, (index,), (x.sizes[0],), x.dtype)


def _bag_bounds(offsets: TensorValue, bags, n) -> tuple[Node, Node]:
    """(start, end) of bag i0: offsets[i0] and the next offset (the last bag ends at n)."""
    b = index_var(0)
    start = cast(offsets.load((b,)), DType.int64)
    following = cast(offsets.load((sympy.Min(b + 1, offsets.sizes[0] - 1),)), DType.int64)
    if sympy.simplify(offsets.sizes[0] - bags) != 0:  # include_last_offset: always a next one
        return start, following
    last = Binary(BinaryOp.EQ, IndexValue(b, DType.int64), constant(bags - 1, DType.int64)
                  if sympy.sympify(bags).is_number else IndexValue(bags - 1, DType.int64),
                  DType.bool)
    end = Where(last, IndexValue(sympy.sympify(n), DType.int64), following, DType.int64)
    return start, end


def _member(indices: TensorValue, start: Node, end: Node, padding_idx) -> tuple[Node, Node]:
    """(whether position r0 belongs to the bag and is not padding, indices[r0] as int64)."""
    r = IndexValue(reduction_var(0), DType.int64)
    idx = cast(indices.load((reduction_var(0),)), DType.int64)
    inside = Binary(BinaryOp.AND, Binary(BinaryOp.GE, r, start, DType.bool),
                    Binary(BinaryOp.LT, r, end, DType.bool), DType.bool)
    if padding_idx is not None and padding_idx >= 0:
        inside = Binary(BinaryOp.AND, inside, Binary(BinaryOp.NE, idx, constant(
            padding_idx, DType.int64), DType.bool), DType.bool)
    return inside, idx


def embedding_bag(ctx: LoweringContext, weight, indices, offsets, mode: int,
                  per_sample_weights, include_last_offset: bool, padding_idx) -> tuple:
    """(output, offset2bag, bag_size, max_indices) as eager's CPU kernel computes them."""
    if indices.ndim != 1 or offsets is None:
        raise UnsupportedOperatorError(ctx.target, ctx.source, "indices must be 1-D with offsets")
    if mode not in (SUM, MEAN, MAX):
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"mode {mode}")
    d = ctx.out_dtype
    weight, indices = (v if isinstance(v.body, Load) else ctx.realize(v) for v in (weight, indices))
    n = indices.sizes[0]
    bags = offsets.sizes[0] - 1 if include_last_offset else offsets.sizes[0]
    start, end = _bag_bounds(offsets, bags, n)
    inside, idx = _member(indices, start, end, padding_idx)
    value: Node = cast(_row(weight, idx, index_var(1)), d)
    if per_sample_weights is not None:
        value = Binary(BinaryOp.MUL, value, cast(per_sample_weights.load((reduction_var(0),)), d), d)
    out_sizes = (bags, weight.sizes[1])
    count = ctx.emit(Reduction(ReduceType.SUM, (n,), cast(inside, DType.int64)), (bags,),
                     DType.int64, hint=f"{ctx.node_name}_count")
    b = (index_var(0),)
    empty = Binary(BinaryOp.EQ, count.load(b), constant(0, DType.int64), DType.bool)
    rtype, identity = (ReduceType.MAX, -float("inf")) if mode == MAX else (ReduceType.SUM, 0)
    red = ctx.emit(Reduction(rtype, (n,), Where(inside, value, constant(identity, d), d)),
                   out_sizes, d, hint=f"{ctx.node_name}_bags")
    result: Node = red.load((index_var(0), index_var(1)))
    if mode == MEAN:
        result = Where(empty, constant(0, d), Binary(BinaryOp.DIV, result, cast(count.load(b), d),
                                                    d), d)
    elif mode == MAX:
        result = Where(empty, constant(0, d), result, d)
    output = ctx.pointwise(result, out_sizes)
    return (output,) + _aux_outputs(ctx, indices, offsets, n, mode, count, inside, value,
                                    empty)


def _aux_outputs(ctx, indices, offsets, n, mode, count, inside, value, empty) -> tuple:
    """offset2bag (the bag of each position, when eager fills it), bag_size (non-padding
    indices per bag, zeros for sums) and max_indices (the row each maximum came from; for
    sums zeros, for means the bag sizes), sized as eager sizes them."""
    i64 = DType.int64
    (o2b_sizes, _), (size_sizes, _), (max_sizes, _) = ctx.outputs[1:4]
    r = reduction_var(0)
    starts_before = Binary(BinaryOp.LE, cast(offsets.load((r,)), i64), IndexValue(index_var(0), i64),
                           DType.bool)
    offset2bag = ctx.pointwise(Binary(BinaryOp.SUB, ctx.emit(
        Reduction(ReduceType.SUM, (offsets.sizes[0],), cast(starts_before, i64)), (n,), i64,
        hint=f"{ctx.node_name}_starts").load((index_var(0),)), constant(1, i64), i64),
        o2b_sizes, hint=f"{ctx.node_name}_offset2bag") if o2b_sizes != (0,) else \
        ctx.pointwise(constant(0, i64), o2b_sizes, hint=f"{ctx.node_name}_offset2bag")
    zero = constant(0, i64)
    bag_size = ctx.pointwise(zero if mode == SUM else count.load((index_var(0),)), size_sizes,
                             hint=f"{ctx.node_name}_bag_size")
    if mode != MAX:
        return offset2bag, bag_size, ctx.pointwise(
            zero if mode == SUM else count.load((index_var(0),)), max_sizes,
            hint=f"{ctx.node_name}_max_indices")
    masked = Where(inside, value, constant(-float("inf"), value.dtype), value.dtype)
    position = ctx.emit(Reduction(ReduceType.ARGMAX, (n,), masked), max_sizes, i64,
                        hint=f"{ctx.node_name}_argmax")
    row = cast(_row1d(indices, position.load((index_var(0), index_var(1)))), i64)
    return offset2bag, bag_size, ctx.pointwise(Where(empty, zero, row, i64), max_sizes,
                                               hint=f"{ctx.node_name}_max_indices")


@register_lowering(aten.embedding_bag.default, aten.embedding_bag.padding_idx,
                   aten._embedding_bag.default, aten._embedding_bag_forward_only.default,
                   family=FAMILY)
def lower_embedding_bag(ctx, weight, indices, offsets, scale_grad_by_freq=False, mode=0,
                        sparse=False, per_sample_weights=None, include_last_offset=False,
                        padding_idx=None):
    """embedding_bag.padding_idx counts a negative padding index from the end (None: no
    padding); the other overloads take -1 for none."""
    if ctx.target.endswith("embedding_bag.padding_idx") and padding_idx is not None \
            and padding_idx < 0:
        padding_idx += int(weight.sizes[0])
    return embedding_bag(ctx, weight, indices, offsets, mode, per_sample_weights,
                         include_last_offset, padding_idx)
