"""Histograms: histc, histogram and histogramdd (a number of bins or explicit edges) and
bincount. Each is a RegionWrite that adds every element's weight into its bin in row-major
order, the bin found with PyTorch's CPU arithmetic in the input's type; elements outside
the edges add nothing."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import Binary, BinaryOp, IndexValue, Node, Where, cast, constant, indirect_var
from ..ir.nodes import ReduceType
from ..ir.regions import RegionWrite, Write
from ..ir.symbols import index_var, index_vars, numel
from .context import LoweringContext, TensorValue
from .reduction import reduce
from .registry import register_lowering
from .sort import search_sorted
from .views import reshape_index

aten = torch.ops.aten
FAMILY = "histogram"
I64 = DType.int64


def _op(op: BinaryOp, a: Node, b: Node, d: DType) -> Node:
    return Binary(op, a, b, d)


def _extremum(ctx: LoweringContext, x: TensorValue, rtype: ReduceType) -> Node:
    """min or max of every element of x, as a 0-dim buffer's value."""
    return reduce(ctx, x, None, False, rtype, x.dtype, hint=f"{ctx.node_name}_{rtype.value}").body


def _linspace_at(start: Node, end: Node, steps: int, j: Node, d: DType) -> Node:
    """Element j of linspace(start, end, steps) as PyTorch's CPU kernel computes it in `d`:
    the first half counts up from start, the second half down from end."""
    step = _op(BinaryOp.DIV, _op(BinaryOp.SUB, end, start, d), constant(steps - 1, d), d)
    up = _op(BinaryOp.ADD, start, _op(BinaryOp.MUL, step, cast(j, d), d), d)
    back = cast(_op(BinaryOp.SUB, constant(steps - 1, I64), j, I64), d)
    down = _op(BinaryOp.SUB, end, _op(BinaryOp.MUL, step, back, d), d)
    return Where(_op(BinaryOp.LT, j, constant(steps // 2, I64), DType.bool), up, down, d)


def _linear_bin(elt: Node, left: Node, right: Node, bins: int, d: DType,
                local_search: bool) -> Node:
    """The bin of an element inside [left, right]: (elt - left) * bins / (right - left)
    truncated, then (histogram, not histc) corrected against the neighbouring edges."""
    scaled = _op(BinaryOp.MUL, _op(BinaryOp.SUB, elt, left, d), constant(bins, d), d)
    pos = cast(_op(BinaryOp.DIV, scaled, _op(BinaryOp.SUB, right, left, d), d), I64)
    if local_search:  # upper_bound over the edges pos-1 .. pos+1, minus one
        first = _op(BinaryOp.MAXIMUM, _op(BinaryOp.SUB, pos, constant(1, I64), I64),
                    constant(0, I64), I64)
        end = _op(BinaryOp.MINIMUM, _op(BinaryOp.ADD, pos, constant(2, I64), I64),
                  constant(bins + 1, I64), I64)
        found: Node = _op(BinaryOp.SUB, first, constant(1, I64), I64)
        for k in range(3):
            j = _op(BinaryOp.ADD, first, constant(k, I64), I64)
            edge = _linspace_at(left, right, bins + 1, j, d)
            below = _op(BinaryOp.AND, _op(BinaryOp.LT, j, end, DType.bool),
                        _op(BinaryOp.LE, edge, elt, DType.bool), DType.bool)
            found = _op(BinaryOp.ADD, found, cast(below, I64), I64)
        pos = found
    return _last_inclusive(pos, bins)


def _last_inclusive(pos: Node, bins) -> Node:
    """The rightmost edge belongs to the last bin."""
    last = constant(bins, I64) if isinstance(bins, int) else bins
    at_end = _op(BinaryOp.EQ, pos, last, DType.bool)
    return Where(at_end, _op(BinaryOp.SUB, pos, constant(1, I64), I64), pos, I64)


def _count_into(ctx: LoweringContext, sizes, weight: Node | None, bins: tuple,
                inside: Node, pos: tuple, d: DType) -> TensorValue:
    """Zeros of sizes `bins` and dtype d, then, for each position of `sizes` in row-major
    order, its weight (a body over the positions; 1 without weights) added at bin `pos`
    (one int64 body per dim) where `inside` holds."""
    w = constant(1, d) if weight is None else cast(weight, d)
    zero = constant(0, I64)
    write = Write(tuple(sizes), tuple(indirect_var(k) for k in range(len(bins))),
                  Where(inside, w, constant(0, d), d),
                  tuple(Where(inside, p, zero, I64) for p in pos),
                  tuple(sympy.sympify(b) for b in bins), BinaryOp.ADD, wrap=False)
    return ctx.emit(RegionWrite(constant(0, d), (write,)), bins, d)


def _between(elt: Node, left: Node, right: Node) -> Node:
    """left <= elt <= right (false for NaN)."""
    return _op(BinaryOp.AND, _op(BinaryOp.GE, elt, left, DType.bool),
               _op(BinaryOp.LE, elt, right, DType.bool), DType.bool)


@register_lowering(aten.histc.default, family=FAMILY, in_storage_type=True)
def lower_histc(ctx, x, bins=100, min=0, max=0):
    """histc: `bins` equal bins over [min, max], or over the data's range when min == max,
    widened by one on each side when that range is empty; counts in x's dtype (a half input
    computes its bins in half, each step rounded, as PyTorch's CPU kernel does)."""
    d = x.dtype
    f64 = DType.float64
    bins = int(bins)
    lo: Node = constant(float(min), f64)
    hi: Node = constant(float(max), f64)
    if float(min) == float(max) and numel(x.sizes) != 0:
        lo = cast(_extremum(ctx, x, ReduceType.MIN), f64)
        hi = cast(_extremum(ctx, x, ReduceType.MAX), f64)
    if d in (DType.float32, DType.float64):  # the next value of d out, or one further
        wide_lo = _op(BinaryOp.MINIMUM, cast(_op(BinaryOp.NEXTAFTER, cast(lo, d),
                                                 constant(float("-inf"), d), d), f64),
                      _op(BinaryOp.SUB, lo, constant(1.0, f64), f64), f64)
        wide_hi = _op(BinaryOp.MAXIMUM, cast(_op(BinaryOp.NEXTAFTER, cast(hi, d),
                                                 constant(float("inf"), d), d), f64),
                      _op(BinaryOp.ADD, hi, constant(1.0, f64), f64), f64)
    else:
        wide_lo = _op(BinaryOp.SUB, lo, constant(1.0, f64), f64)
        wide_hi = _op(BinaryOp.ADD, hi, constant(1.0, f64), f64)
    empty = _op(BinaryOp.EQ, lo, hi, DType.bool)
    left = cast(Where(empty, wide_lo, lo, f64), d)
    right = cast(Where(empty, wide_hi, hi, f64), d)
    elt = x.load(index_vars(x.ndim))
    pos = _linear_bin(elt, left, right, bins, d, local_search=False)
    return _count_into(ctx, x.sizes, None, (bins,), _between(elt, left, right), (pos,), d)


@register_lowering(aten.histogram.bin_ct, family=FAMILY)
def lower_histogram(ctx, x, bins=100, *, range=None, weight=None, density=False):
    """histogram with `bins` equal bins over `range` (default the data's, widened by a half
    on each side when empty; [0, 1] for no data): (hist, bin_edges)."""
    d = x.dtype
    if d is not DType.float32:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"of {d.name}")
    f64 = DType.float64
    bins = int(bins)
    if range is not None:
        lo: Node = constant(float(range[0]), f64)
        hi: Node = constant(float(range[1]), f64)
    elif numel(x.sizes) == 0:
        lo, hi = constant(0.0, f64), constant(1.0, f64)
    else:
        lo = cast(_extremum(ctx, x, ReduceType.MIN), f64)
        hi = cast(_extremum(ctx, x, ReduceType.MAX), f64)
    lo, hi = _widen_empty(lo, hi)
    left, right = cast(lo, d), cast(hi, d)
    # the edges first, so that the element loops read two stored values
    edges = ctx.pointwise(_linspace_at(left, right, bins + 1, IndexValue(index_var(0), I64), d),
                          (sympy.Integer(bins + 1),), hint=f"{ctx.node_name}_edges")
    left, right = edges.load((0,)), edges.load((bins,))
    elt = x.load(index_vars(x.ndim))
    pos = _linear_bin(elt, left, right, bins, d, local_search=True)
    w = None if weight is None else weight.load(index_vars(x.ndim))
    hist = _count_into(ctx, x.sizes, w, (bins,), _between(elt, left, right), (pos,), d)
    if density:
        hist = _density(ctx, hist, [edges], d)
    return hist, edges


def _widen_empty(lo: Node, hi: Node) -> tuple[Node, Node]:
    """An empty range [a, a] becomes [a - 0.5, a + 0.5] (in double), as numpy's."""
    f64 = DType.float64
    empty = _op(BinaryOp.EQ, lo, hi, DType.bool)
    half = constant(0.5, f64)
    return (Where(empty, _op(BinaryOp.SUB, lo, half, f64), lo, f64),
            Where(empty, _op(BinaryOp.ADD, hi, half, f64), hi, f64))


def _density(ctx: LoweringContext, hist: TensorValue, edges: list, d: DType) -> TensorValue:
    """hist / sum(hist), then divided by each bin's width along each dim in turn."""
    total = reduce(ctx, hist, None, False, ReduceType.SUM, d, hint=f"{ctx.node_name}_total")
    iv = index_vars(hist.ndim)
    value = _op(BinaryOp.DIV, hist.body, total.body, d)
    for k, e in enumerate(edges):
        width = _op(BinaryOp.SUB, e.load((iv[k] + 1,)), e.load((iv[k],)), d)
        value = _op(BinaryOp.DIV, value, width, d)
    return ctx.pointwise(value, hist.sizes)


@register_lowering(aten.histogram.bins_tensor, family=FAMILY)
def lower_histogram_edges(ctx, x, bins, *, weight=None, density=False):
    """histogram with explicit edges: the bin of an element is upper_bound(edges) - 1, the
    last edge inclusive; (hist, a copy of the edges)."""
    d = x.dtype
    n = bins.sizes[0] if bins.ndim == 1 else None
    if d is not DType.float32 or n is None or not n.is_number:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"of {d.name} with edges of "
                                       f"sizes {bins.sizes}")
    n = int(n)
    flat = ctx.realize(_flat(x))
    found = search_sorted(ctx, bins, flat, False, True, None)
    pos = _last_inclusive(_op(BinaryOp.SUB, found.body, constant(1, I64), I64), n - 1)
    inside = _between(flat.body, bins.load((0,)), bins.load((n - 1,)))
    hist = _count_into(ctx, flat.sizes, None if weight is None else _flat(weight).body,
                       (n - 1,), inside, (pos,), d)
    edges = ctx.pointwise(bins.body, bins.sizes, hint=f"{ctx.node_name}_edges")
    if density:
        hist = _density(ctx, hist, [edges], d)
    return hist, edges


def _flat(t: TensorValue) -> TensorValue:
    """t's elements in row-major order, as a 1-D value."""
    n = numel(t.sizes)
    return TensorValue((n,), t.dtype, t.load(reshape_index(t.sizes, (n,))))


@register_lowering(aten.bincount.default, family=FAMILY)
def lower_bincount(ctx, x, weights=None, minlength=0):
    """bincount: how often each value of x occurs (or the sum of its weights), over
    max(max(x) + 1, minlength) bins: a count export leaves as a symbol, bound during the run
    once the max is known; a negative value is an input error."""
    if x.ndim != 1 or not x.dtype.is_integer:
        raise UnsupportedOperatorError(ctx.target, ctx.source, "x must be 1-d integers")
    length = ctx.out_sizes[0]
    if isinstance(length, sympy.Symbol) and length not in ctx.program.item_symbols:
        top = reduce(ctx, TensorValue(x.sizes, I64, cast(x.body, I64)), None, False,
                     ReduceType.MAX, I64, hint=f"{ctx.node_name}_max")
        bins = _op(BinaryOp.MAXIMUM, _op(BinaryOp.ADD, top.body, constant(1, I64), I64),
                   constant(int(minlength), I64), I64)
        ctx.program.item_symbols[length] = bins
        ctx.program.symbols.setdefault(length, (int(minlength), None))
    elif not sympy.sympify(length).is_number:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"export gave the bin count as "
                                       f"{length}")
    d = ctx.out_dtype
    (i,) = index_vars(1)
    w = constant(1, d) if weights is None else cast(weights.load((i,)), d)
    write = Write(x.sizes, (indirect_var(0),), w, (cast(x.load((i,)), I64),), (length,),
                  BinaryOp.ADD, wrap=False)
    return ctx.emit(RegionWrite(constant(0, d), (write,)), (length,), d)


def _dd_edges(ctx: LoweringContext, x: TensorValue, bins, limits) -> list[TensorValue]:
    """Each dim's edges for histogramdd of x [..., D]: linspace over `limits` (lo, hi pairs)
    or the column's min and max ([0, 1] without data), an empty range widened by a half."""
    d, f64 = x.dtype, DType.float64
    if d is not DType.float32 or x.ndim < 2:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"of {d.name} with {x.ndim} dims")
    lead = list(range(x.ndim - 1))
    data = limits is None and numel(x.sizes) != 0
    if data:
        mins = reduce(ctx, x, lead, False, ReduceType.MIN, d, hint=f"{ctx.node_name}_min")
        maxs = reduce(ctx, x, lead, False, ReduceType.MAX, d, hint=f"{ctx.node_name}_max")
    edges = []
    for k, n in enumerate(bins):
        if limits is not None:
            lo: Node = constant(float(limits[2 * k]), f64)
            hi: Node = constant(float(limits[2 * k + 1]), f64)
        elif data:
            lo, hi = cast(mins.load((k,)), f64), cast(maxs.load((k,)), f64)
        else:
            lo, hi = constant(0.0, f64), constant(1.0, f64)
        lo, hi = _widen_empty(lo, hi)
        at = _linspace_at(cast(lo, d), cast(hi, d), int(n) + 1, IndexValue(index_var(0), I64), d)
        edges.append(ctx.pointwise(at, (sympy.Integer(int(n) + 1),),
                                   hint=f"{ctx.node_name}_edges{k}"))
    return edges


@register_lowering(aten._histogramdd_bin_edges.default, family=FAMILY)
def lower_histogramdd_bin_edges(ctx, x, bins, *, range=None, weight=None, density=False):
    return tuple(_dd_edges(ctx, x, bins, range))


@register_lowering(aten._histogramdd_from_bin_cts.default, family=FAMILY)
def lower_histogramdd_from_bin_cts(ctx, x, bins, *, range=None, weight=None, density=False):
    """histogramdd with bins[k] equal bins along dim k: each row of x [..., D] adds its
    weight at the bins its D values fall in, found as histogram finds them."""
    edges = _dd_edges(ctx, x, bins, range)
    d = x.dtype
    lead = x.sizes[:-1]
    iv = index_vars(len(lead))
    inside: Node = constant(True, DType.bool)
    pos = []
    for k, (n, e) in enumerate(zip(bins, edges)):
        elt = x.load((*iv, k))
        left, right = e.load((0,)), e.load((int(n),))
        inside = _op(BinaryOp.AND, inside, _between(elt, left, right), DType.bool)
        pos.append(_linear_bin(elt, left, right, int(n), d, local_search=True))
    w = None if weight is None else weight.load(iv)
    hist = _count_into(ctx, lead, w, tuple(sympy.Integer(int(n)) for n in bins), inside,
                       tuple(pos), d)
    return _density(ctx, hist, edges, d) if density else hist


@register_lowering(aten._histogramdd_from_bin_tensors.default, family=FAMILY)
def lower_histogramdd_from_bin_tensors(ctx, x, bins, *, weight=None, density=False):
    """histogramdd with explicit edges per dim: each row of x [..., D] adds its weight at
    upper_bound(edges[k], x[.., k]) - 1 along each dim k, the last edge inclusive."""
    d = x.dtype
    if d is not DType.float32 or x.ndim < 2:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"of {d.name} with {x.ndim} dims")
    lead = x.sizes[:-1]
    m = numel(lead)
    rows = reshape_index(lead, (m,))
    inside: Node = constant(True, DType.bool)
    pos, counts = [], []
    for k, b in enumerate(bins):
        n = b.sizes[0] if b.ndim == 1 else None
        if n is None or not n.is_number:
            raise UnsupportedOperatorError(ctx.target, ctx.source, f"edges of sizes {b.sizes}")
        n = int(n)
        column = ctx.realize(TensorValue((m,), d, x.load((*rows, k))))
        found = search_sorted(ctx, b, column, False, True, None)
        elt = column.body
        inside = _op(BinaryOp.AND, inside, _between(elt, b.load((0,)), b.load((n - 1,))),
                     DType.bool)
        pos.append(_last_inclusive(_op(BinaryOp.SUB, found.body, constant(1, I64), I64), n - 1))
        counts.append(sympy.Integer(n - 1))
    w = None if weight is None else _flat(weight).body
    hist = _count_into(ctx, (m,), w, tuple(counts), inside, tuple(pos), d)
    return _density(ctx, hist, list(bins), d) if density else hist
