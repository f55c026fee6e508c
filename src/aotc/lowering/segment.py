"""segment_reduce: sum, mean, max, min or prod over consecutive segments of one axis, the
segments given by their lengths or offsets (tensors, so their bounds are data)."""
from __future__ import annotations

import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import Binary, BinaryOp, IndexValue, Node, Where, cast, constant
from ..ir.nodes import ReduceType, Reduction, ScanOp
from ..ir.symbols import index_vars, reduction_var
from .context import LoweringContext
from .registry import register_lowering
from .scan import scan

aten = torch.ops.aten
FAMILY = "reduction"
INF = float("inf")
# reduction, the value an empty segment starts from, how the initial value joins in
_KINDS = {"sum": (ReduceType.SUM, 0, BinaryOp.ADD), "mean": (ReduceType.SUM, 0, BinaryOp.ADD),
          "prod": (ReduceType.PROD, 1, BinaryOp.MUL), "max": (ReduceType.MAX, -INF, BinaryOp.MAXIMUM),
          "min": (ReduceType.MIN, INF, BinaryOp.MINIMUM)}


def _bounds(ctx: LoweringContext, lengths, offsets, segments: int) -> tuple:
    """(start, end) of segment (b..., s) as int64 nodes over the output's leading index."""
    iv = index_vars(segments + 1)
    if offsets is not None:
        head = iv[:segments]
        return (cast(offsets.load(head + (iv[segments],)), DType.int64),
                cast(offsets.load(head + (iv[segments] + 1,)), DType.int64))
    ends = scan(ctx, lengths, lengths.ndim - 1, ScanOp.SUM, DType.int64,
                hint=f"{ctx.node_name}_ends")
    at = iv[:segments + 1]
    end = ends.load(at)
    return Binary(BinaryOp.SUB, end, cast(lengths.load(at), DType.int64), DType.int64), end


@register_lowering(aten.segment_reduce.default, family=FAMILY)
def lower_segment_reduce(ctx, data, reduce, *, lengths=None, indices=None, offsets=None,
                         axis=0, unsafe=False, initial=None):
    """out[b..., s, inner...] reduces data[b..., k, inner...] over the k of segment s, starting
    from `initial` (or the reduction's identity), as eager's CPU kernel: the initial value
    joins every segment, an empty one is `initial` (a mean of nothing without it is NaN), and
    a mean divides by the segment's length."""
    if reduce not in _KINDS:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"reduction {reduce!r}")
    if lengths is None and offsets is None:
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       "segments given by indices (eager takes lengths or offsets)")
    axis = axis % data.ndim
    d = ctx.out_dtype
    rtype, identity, join = _KINDS[reduce]
    start, end = _bounds(ctx, lengths, offsets, axis)
    iv, r = index_vars(data.ndim), reduction_var(0)
    k = IndexValue(r, DType.int64)
    inside = Binary(BinaryOp.AND, Binary(BinaryOp.GE, k, start, DType.bool),
                    Binary(BinaryOp.LT, k, end, DType.bool), DType.bool)
    element = cast(data.load(iv[:axis] + (r,) + iv[axis + 1:]), d)
    body = Where(inside, element, constant(identity, d), d)
    red = ctx.emit(Reduction(rtype, (data.sizes[axis],), body), ctx.out_sizes, d,
                   hint=f"{ctx.node_name}_{reduce}")
    value: Node = red.load(iv)
    if initial is not None:
        value = Binary(join, constant(initial, d), value, d)
    if reduce == "mean":
        count = Binary(BinaryOp.SUB, end, start, DType.int64)
        empty = Binary(BinaryOp.EQ, count, constant(0, DType.int64), DType.bool)
        value = Where(empty, constant(initial if initial is not None else float("nan"), d),
                      Binary(BinaryOp.DIV, value, cast(count, d), d), d)
    return ctx.pointwise(value, ctx.out_sizes)

