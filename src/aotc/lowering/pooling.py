"""Pooling over the last 1-3 dims: max (with indices), average, adaptive average and max.

Each is a reduction over the window of one output element; positions outside the input
(padding, ceil_mode's last window, an adaptive window shorter than the longest) are masked,
so every load stays in bounds.
"""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import Binary, BinaryOp, IndexValue, Node, Where, cast, constant
from ..ir.nodes import ReduceType, Reduction
from ..ir.symbols import FloorDiv, index_vars, reduction_var
from .context import LoweringContext, TensorValue
from .padding import at_least_zero, below, both, clamp_index
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "pooling"
I64 = DType.int64


def lowest_value(d: DType):
    """What a masked position holds in a max: below every value of the dtype."""
    if d.is_floating:
        return float("-inf")
    if d is DType.bool:
        return False
    return int(torch.iinfo(getattr(torch, d.name)).min)


def _per_dim(v, n: int, default=None) -> tuple[int, ...]:
    if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
        v = default
    vals = [v] * n if isinstance(v, int) else list(v)
    if len(vals) == 1 and n > 1:
        vals = vals * n
    return tuple(int(x) for x in vals)


def _value(e) -> Node:
    e = sympy.sympify(e)
    return constant(int(e), I64) if e.is_number else IndexValue(e, I64)


class Window:
    """The window of output element (i...) over the last n dims of x: start + r*dilation
    along each pooled dim, for r in [0, length), masked where outside x or past `stop`."""

    def __init__(self, x: TensorValue, out_sizes, starts, lengths, dilation, stops=None):
        self.x, self.n = x, len(lengths)
        self.out = tuple(out_sizes)
        self.lead = x.ndim - self.n
        self.lengths = tuple(sympy.sympify(k) for k in lengths)
        iv = index_vars(len(self.out))
        self.rv = tuple(reduction_var(k) for k in range(self.n))
        ranges = dict(zip(iv, self.out)) | dict(zip(self.rv, self.lengths))
        self.pos, self.valid = [], None
        self.inside: list[bool] = []  # per pooled dim: every position provably in range
        for k in range(self.n):
            size = x.sizes[self.lead + k]
            pos = sympy.expand(starts[k] + self.rv[k] * dilation[k])
            self.pos.append(pos)
            dim_valid = both(at_least_zero(pos), below(pos, size, ranges))
            self.inside.append(dim_valid is None)
            self.valid = both(self.valid, dim_valid)
            if stops is not None and stops[k] is not None:
                self.valid = both(self.valid, Binary(BinaryOp.LT, _value(pos), _value(stops[k]),
                                                     DType.bool))

    def element(self, fill) -> Node:
        """x at the window position, `fill` where masked."""
        iv = index_vars(len(self.out))
        src = list(iv[:self.lead])
        for k in range(self.n):
            size = self.x.sizes[self.lead + k]
            # a dim whose positions are all in range is read as is: a clamp the compiler
            # cannot see through would turn a unit-stride row into a gather
            inside = self.valid is None or self.inside[k]
            src.append(self.pos[k] if inside else clamp_index(self.pos[k], size))
        body = self.x.load(src)
        if self.valid is None:
            return body
        return Where(self.valid, body, constant(fill, self.x.dtype), self.x.dtype)

    def reduce(self, ctx: LoweringContext, rtype: ReduceType, fill, dtype: DType, hint: str):
        body = self.element(fill)
        if rtype not in (ReduceType.ARGMAX, ReduceType.ARGMIN):
            body = cast(body, dtype)
        return ctx.emit(Reduction(rtype, self.lengths, body), self.out, dtype, hint)

    def flat_input_index(self, ctx: LoweringContext, arg: TensorValue) -> TensorValue:
        """The argmax's window position as torch's index: flat over the pooled input dims."""
        iv = index_vars(len(self.out))
        r = arg.load(iv)
        total: Node = constant(0, I64)
        inner = sympy.Integer(1)
        for k in reversed(range(self.n)):
            rk = Binary(BinaryOp.FLOORDIV, r, _value(inner), I64) if inner != 1 else r
            rk = Binary(BinaryOp.REMAINDER, rk, _value(self.lengths[k]), I64)
            inner = inner * self.lengths[k]
            pos = self.pos[k].xreplace({self.rv[k]: 0})  # the window start
            d = sympy.expand(self.pos[k].coeff(self.rv[k]))
            at = Binary(BinaryOp.ADD, _value(pos), Binary(BinaryOp.MUL, rk, _value(d), I64), I64)
            stride = sympy.Mul(*self.x.sizes[self.lead + k + 1:])
            if stride != 1:
                at = Binary(BinaryOp.MUL, at, _value(stride), I64)
            total = Binary(BinaryOp.ADD, total, at, I64)
        return ctx.pointwise(total, self.out, hint=f"{ctx.node_name}_indices")


def _fixed_window(x: TensorValue, out, kernel, stride, padding, dilation) -> Window:
    n = len(kernel)
    iv = index_vars(len(out))
    lead = x.ndim - n
    starts = [iv[lead + k] * stride[k] - padding[k] for k in range(n)]
    return Window(x, out, starts, kernel, dilation)


def _max_pool(ctx, x, kernel_size, stride, padding, dilation, n: int, with_indices: bool):
    kernel = _per_dim(kernel_size, n)
    stride = _per_dim(stride, n, kernel)
    padding, dilation = _per_dim(padding, n), _per_dim(dilation, n)
    out = ctx.out_sizes
    fill = lowest_value(x.dtype)
    if not with_indices and sum(k > 1 for k in kernel) > 1:
        return _separable_max(ctx, x, out, kernel, stride, padding, dilation, fill)
    w = _fixed_window(x, out, kernel, stride, padding, dilation)
    values = w.reduce(ctx, ReduceType.MAX, fill, x.dtype, f"{ctx.node_name}_values")
    if not with_indices:
        return values
    arg = w.reduce(ctx, ReduceType.ARGMAX, fill, I64, f"{ctx.node_name}_argmax")
    return values, w.flat_input_index(ctx, arg)


def _separable_max(ctx, x, out, kernel, stride, padding, dilation, fill):
    """The max over a box is the max over each pooled dim in turn: one 1-D window at a time,
    the outer dims first, so that those passes read whole rows (unit stride along the last
    dim) and only the last one gathers along a strided row, over fewer rows and taps than
    the box (a 3x3 window: 3 taps a gathered output instead of 9). Positions outside the
    input are masked in every pass, so the result (NaN included) is the box's."""
    n = len(kernel)
    lead = x.ndim - n
    sizes = list(x.sizes)
    cur = x
    for k in range(n):
        if kernel[k] == 1 and stride[k] == 1 and padding[k] == 0 and sizes[lead + k] == out[lead + k]:
            continue
        sizes[lead + k] = out[lead + k]
        one = [1] * n
        ks, ss, ps, ds = list(one), list(one), [0] * n, list(one)
        ks[k], ss[k], ps[k], ds[k] = kernel[k], stride[k], padding[k], dilation[k]
        w = _fixed_window(cur, tuple(sizes), ks, ss, ps, ds)
        last = all(kernel[j] == 1 and stride[j] == 1 and padding[j] == 0 for j in range(k + 1, n))
        hint = f"{ctx.node_name}_values" if last else f"{ctx.node_name}_rows{k}"
        cur = w.reduce(ctx, ReduceType.MAX, fill, x.dtype, hint)
    return cur


def _register_max_pool(n: int) -> None:
    """max_pool{n}d and max_pool{n}d_with_indices (values, flat input positions)."""

    @register_lowering(getattr(aten, f"max_pool{n}d").default, family=FAMILY)
    def lower(ctx, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        return _max_pool(ctx, x, kernel_size, stride, padding, dilation, n, False)

    @register_lowering(getattr(aten, f"max_pool{n}d_with_indices").default, family=FAMILY)
    def lower_indices(ctx, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        return _max_pool(ctx, x, kernel_size, stride, padding, dilation, n, True)


for _n in (1, 2, 3):
    _register_max_pool(_n)


def _avg_pool(ctx, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override, n: int):
    """The window's sum over its divisor; an int64 average is the int64 sum divided with C's
    truncation toward zero, as eager's integer kernel does."""
    if not (x.dtype.is_floating or x.dtype is I64):
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"average of {x.dtype.name}")
    kernel = _per_dim(kernel_size, n)
    stride, padding = _per_dim(stride, n, kernel), _per_dim(padding, n)
    out = ctx.out_sizes
    d = x.dtype
    w = _fixed_window(x, out, kernel, stride, padding, (1,) * n)
    total = w.reduce(ctx, ReduceType.SUM, 0, d, f"{ctx.node_name}_sum")
    iv = index_vars(len(out))
    if divisor_override:
        divisor: Node = constant(divisor_override, d)
    else:
        count = sympy.Integer(1)
        for k in range(n):
            size = x.sizes[w.lead + k]
            start = iv[w.lead + k] * stride[k] - padding[k]
            end = sympy.Min(start + kernel[k], size + padding[k])
            if count_include_pad:
                count *= end - start
            else:
                count *= sympy.Min(end, size) - sympy.Max(start, 0)
        divisor = cast(_value(count), d)
    quotient = BinaryOp.DIV if d.is_floating else BinaryOp.TRUNCDIV
    return ctx.pointwise(Binary(quotient, total.load(iv), divisor, d), out)


@register_lowering(aten.avg_pool1d.default, family=FAMILY)
def lower_avg_pool1d(ctx, x, kernel_size, stride=(), padding=0, ceil_mode=False,
                     count_include_pad=True):
    return _avg_pool(ctx, x, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


@register_lowering(aten.avg_pool2d.default, aten.avg_pool3d.default, family=FAMILY)
def lower_avg_pool(ctx, x, kernel_size, stride=(), padding=0, ceil_mode=False,
                   count_include_pad=True, divisor_override=None):
    n = 2 if "2d" in ctx.target else 3
    return _avg_pool(ctx, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, n)


# ---- adaptive pooling: window k of n outputs over m inputs is [k*m // n, ceil((k+1)*m / n)) --

def _adaptive_window(ctx, x: TensorValue, n: int) -> tuple[Window, list]:
    out = ctx.out_sizes
    iv = index_vars(len(out))
    lead = x.ndim - n
    starts: list[sympy.Expr] = []
    stops: list[sympy.Expr | None] = []
    lengths: list = []
    for k in range(n):
        m, o = x.sizes[lead + k], out[lead + k]
        if o == 1:  # the whole dim: its size, static or not
            starts.append(sympy.Integer(0))
            stops.append(None)
            lengths.append(m)
            continue
        if not (m.is_number and o.is_number):
            raise UnsupportedOperatorError(ctx.target, ctx.source,
                                           "adaptive pooling of a dynamic size to more than 1")
        m, o = int(m), int(o)
        starts.append(FloorDiv(iv[lead + k] * m, o))
        stops.append(FloorDiv((iv[lead + k] + 1) * m + o - 1, o))
        lengths.append(max(-(-(j + 1) * m // o) - j * m // o for j in range(o)))
    counts = [x.sizes[lead + k] if e is None else sympy.sympify(e) - s
              for k, (e, s) in enumerate(zip(stops, starts))]
    return Window(x, out, starts, lengths, (1,) * n, stops), counts


def _adaptive_avg(ctx, x, n: int):
    w, counts = _adaptive_window(ctx, x, n)
    d = x.dtype
    total = w.reduce(ctx, ReduceType.SUM, 0, d, f"{ctx.node_name}_sum")
    iv = index_vars(len(w.out))
    count = sympy.Mul(*counts)
    return ctx.pointwise(Binary(BinaryOp.DIV, total.load(iv), cast(_value(count), d), d), w.out)


@register_lowering(aten.adaptive_avg_pool1d.default, aten.adaptive_avg_pool2d.default,
                   aten._adaptive_avg_pool2d.default, aten.adaptive_avg_pool3d.default,
                   aten._adaptive_avg_pool3d.default, family=FAMILY)
def lower_adaptive_avg_pool(ctx, x, output_size):
    return _adaptive_avg(ctx, x, len(output_size))


@register_lowering(aten.adaptive_max_pool1d.default, aten.adaptive_max_pool2d.default,
                   aten.adaptive_max_pool3d.default, family=FAMILY)
def lower_adaptive_max_pool(ctx, x, output_size):
    w, _ = _adaptive_window(ctx, x, len(output_size))
    fill = lowest_value(x.dtype)
    values = w.reduce(ctx, ReduceType.MAX, fill, x.dtype, f"{ctx.node_name}_values")
    arg = w.reduce(ctx, ReduceType.ARGMAX, fill, I64, f"{ctx.node_name}_argmax")
    return values, w.flat_input_index(ctx, arg)
