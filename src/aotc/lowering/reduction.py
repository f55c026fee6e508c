"""Reduction lowerings: sum/mean/amax/amin/prod/any/all/var, argmax/argmin and max/min over
a dim, and the softmax family."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..ir.expr import Binary, BinaryOp, IndexValue, Node, Unary, UnaryOp, cast, constant
from ..ir.nodes import ARG_REDUCTIONS, ReduceType, Reduction
from ..ir.symbols import index_vars, numel, reduction_var
from .common import dim_index, dims_list, operand
from .context import LoweringContext, TensorValue
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "reduction"


def reduce(ctx: LoweringContext, x: TensorValue, dims, keepdim: bool, rtype: ReduceType,
           dtype: DType, body_of=None, hint=None) -> TensorValue:
    """Reduce `x` over `dims`; `body_of(load)` may transform each element first."""
    dims = dims_list(dims, x.ndim)
    kept = [k for k in range(x.ndim) if k not in dims]
    out_sizes = [sympy.Integer(1) if k in dims else x.sizes[k] for k in range(x.ndim)] \
        if keepdim else [x.sizes[k] for k in kept]
    iv = index_vars(len(out_sizes))
    src, r, o = [], 0, 0
    for k in range(x.ndim):
        if k in dims:
            src.append(reduction_var(r))
            r += 1
            if keepdim:
                o += 1
        else:
            src.append(iv[k] if keepdim else iv[o])
            o += 1
    elem = x.load(src)
    body = body_of(elem, src) if body_of else elem
    value_dtype = x.dtype if rtype in ARG_REDUCTIONS else dtype  # arg: compare, store int64
    ranges = tuple(x.sizes[k] for k in dims)
    return ctx.emit(Reduction(rtype, ranges, cast(body, value_dtype)), out_sizes, dtype, hint)


def require_nonempty(ctx: LoweringContext, x: TensorValue, dims) -> None:
    """A reduction with no identity (max, min, argmax, median, ...) raises in eager over an
    empty dim, or over every element of an empty tensor when no dim is given: the run fails
    the same way, wherever a dynamic size may be 0."""
    if x.ndim == 0:
        return
    op = op_name(ctx)
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        ctx.require(sympy.Ne(numel(x.sizes), 0, evaluate=False),
                    f"{op}(): expected reduction dim to be specified for input.numel() == 0 "
                    "(the input is empty for these inputs)")
        return
    for d in dims_list(dims, x.ndim):
        ctx.require(sympy.Ne(x.sizes[d], 0, evaluate=False),
                    f"{op}(): expected reduction dim {d} to have non-zero size (it is 0 for "
                    "these inputs)")


def op_name(ctx: LoweringContext) -> str:
    """'amax' for aten.amax.default: how eager's messages name the op."""
    parts = ctx.target.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "aten" else ctx.target


def _count(x: TensorValue, dims) -> sympy.Expr:
    return numel(tuple(x.sizes[k] for k in dims_list(dims, x.ndim)))


def _as_value(n: sympy.Expr, dtype: DType) -> Node:
    return constant(n, dtype) if n.is_number else cast(IndexValue(n, DType.int64), dtype)


@register_lowering(aten.sum.dim_IntList, aten.sum.default, family=FAMILY)
def lower_sum(ctx, x, dims=None, keepdim=False, dtype=None):
    return reduce(ctx, x, dims, keepdim, ReduceType.SUM, ctx.out_dtype)


@register_lowering(aten.prod.default, aten.prod.dim_int, family=FAMILY)
def lower_prod(ctx, x, dim=None, keepdim=False, dtype=None):
    return reduce(ctx, x, dim, keepdim, ReduceType.PROD, ctx.out_dtype)


@register_lowering(aten.mean.dim, aten.mean.default, family=FAMILY)
def lower_mean(ctx, x, dims=None, keepdim=False, dtype=None):
    d = ctx.out_dtype
    s = reduce(ctx, x, dims, keepdim, ReduceType.SUM, d, hint=f"{ctx.node_name}_sum")
    return ctx.pointwise(Binary(BinaryOp.DIV, operand(s, d, s.sizes),
                                _as_value(_count(x, dims), d), d))


@register_lowering(aten.amax.default, aten.max.default, family=FAMILY)
def lower_amax(ctx, x, dims=None, keepdim=False):
    require_nonempty(ctx, x, dims)
    return reduce(ctx, x, dims, keepdim, ReduceType.MAX, ctx.out_dtype)


@register_lowering(aten.amin.default, aten.min.default, family=FAMILY)
def lower_amin(ctx, x, dims=None, keepdim=False):
    require_nonempty(ctx, x, dims)
    return reduce(ctx, x, dims, keepdim, ReduceType.MIN, ctx.out_dtype)


@register_lowering(aten.argmax.default, aten.argmin.default, family=FAMILY)
def lower_argmax(ctx, x, dim=None, keepdim=False):
    rtype = ReduceType.ARGMAX if "argmax" in ctx.target else ReduceType.ARGMIN
    require_nonempty(ctx, x, dim)
    return reduce(ctx, x, dim, keepdim, rtype, DType.int64)


@register_lowering(aten.max.dim, aten.min.dim, family=FAMILY)
def lower_max_dim(ctx, x, dim, keepdim=False):
    """(values, indices) over one dim: a max and an argmax reduction."""
    is_max = "max" in ctx.target
    require_nonempty(ctx, x, dim)
    values = reduce(ctx, x, dim, keepdim, ReduceType.MAX if is_max else ReduceType.MIN, x.dtype,
                    hint=f"{ctx.node_name}_values")
    indices = reduce(ctx, x, dim, keepdim, ReduceType.ARGMAX if is_max else ReduceType.ARGMIN,
                     DType.int64, hint=f"{ctx.node_name}_indices")
    return values, indices


@register_lowering(aten.any.default, aten.any.dim, aten.any.dims, family=FAMILY)
def lower_any(ctx, x, dims=None, keepdim=False):
    return reduce(ctx, x, dims, keepdim, ReduceType.ANY, DType.bool, _truth)


@register_lowering(aten.all.default, aten.all.dim, aten.all.dims, family=FAMILY)
def lower_all(ctx, x, dims=None, keepdim=False):
    return reduce(ctx, x, dims, keepdim, ReduceType.ALL, DType.bool, _truth)


def _truth(elem: Node, _src) -> Node:
    if elem.dtype is DType.bool:
        return elem
    return Binary(BinaryOp.NE, elem, constant(0, elem.dtype), DType.bool)


def variance(ctx, x: TensorValue, dims, correction, keepdim: bool, d: DType,
             mean: TensorValue | None = None) -> TensorValue:
    """Two-pass variance: the (keepdim) mean first, then the sum of squared deviations."""
    mean = lower_mean_keep(ctx, x, dims, d) if mean is None else mean
    reduced = dims_list(dims, x.ndim)
    n = _count(x, dims)

    def sq_dev(elem, src):
        m = mean.load([0 if k in reduced else s for k, s in enumerate(src)])
        dev = Binary(BinaryOp.SUB, cast(elem, d), m, d)
        return Binary(BinaryOp.MUL, dev, dev, d)

    ss = reduce(ctx, x, dims, keepdim, ReduceType.SUM, d, sq_dev, hint=f"{ctx.node_name}_ssq")
    denom = Binary(BinaryOp.MAXIMUM, Binary(BinaryOp.SUB, _as_value(n, d), constant(correction, d), d),
                   constant(0, d), d)
    return ctx.pointwise(Binary(BinaryOp.DIV, operand(ss, d, ss.sizes), denom, d), ss.sizes)


def lower_mean_keep(ctx, x, dims, d: DType) -> TensorValue:
    s = reduce(ctx, x, dims, True, ReduceType.SUM, d, hint=f"{ctx.node_name}_sum")
    return ctx.pointwise(Binary(BinaryOp.DIV, operand(s, d, s.sizes), _as_value(_count(x, dims), d),
                                d), s.sizes, hint=f"{ctx.node_name}_mean")


@register_lowering(aten.var.correction, aten.var.dim, aten.var.default, aten.std.correction,
                   aten.std.dim, aten.std.default, family=FAMILY)
def lower_var(ctx, x, dims=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dims, bool):  # var.default(x, unbiased)
        dims, unbiased = None, dims
    if correction is None:
        correction = 1 if unbiased in (None, True) else 0
    d = ctx.out_dtype
    v = variance(ctx, x, dims, correction, keepdim, d)
    if "std" in ctx.target:
        return ctx.pointwise(Unary(UnaryOp.SQRT, operand(v, d, v.sizes), d), v.sizes)
    return v


@register_lowering(aten.var_mean.correction, aten.var_mean.dim, aten.var_mean.default,
                   aten.std_mean.correction, aten.std_mean.dim, aten.std_mean.default,
                   family=FAMILY)
def lower_var_mean(ctx, x, dims=None, unbiased=None, keepdim=False, *, correction=None):
    """(variance or standard deviation, mean) over dims, from one mean."""
    if isinstance(dims, bool):
        dims, unbiased = None, dims
    if correction is None:
        correction = 1 if unbiased in (None, True) else 0
    d = ctx.out_dtype
    mean = lower_mean_keep(ctx, x, dims, d)
    v = variance(ctx, x, dims, correction, keepdim, d, mean)
    if "std" in ctx.target:
        v = ctx.pointwise(Unary(UnaryOp.SQRT, operand(v, d, v.sizes), d), v.sizes)
    if not keepdim:  # the mean's reduced unit dims go, as in the variance
        reduced = dims_list(dims, x.ndim)
        kept = [k for k in range(x.ndim) if k not in reduced]
        iv = index_vars(len(kept))
        src = [iv[kept.index(k)] if k in kept else 0 for k in range(x.ndim)]
        mean = ctx.pointwise(mean.load(src), v.sizes, hint=f"{ctx.node_name}_mean_out")
    return v, mean


def _softmax_parts(ctx, x: TensorValue, dim: int, d: DType):
    """(max over dim, sum over dim of exp(x - max)), both keepdim."""
    dim = dim_index(dim, x.ndim)
    m = reduce(ctx, x, [dim], True, ReduceType.MAX, d, hint=f"{ctx.node_name}_max")

    def shifted_exp(elem, src):
        mi = m.load([0 if k == dim else s for k, s in enumerate(src)])
        return Unary(UnaryOp.EXP, Binary(BinaryOp.SUB, cast(elem, d), mi, d), d)

    s = reduce(ctx, x, [dim], True, ReduceType.SUM, d, shifted_exp, hint=f"{ctx.node_name}_sum")
    return m, s


@register_lowering(aten.softmax.int, aten._softmax.default, family=FAMILY)
def lower_softmax(ctx, x, dim, half_to_float=False, dtype=None):
    d = ctx.out_dtype
    if x.ndim == 0:
        return ctx.pointwise(constant(1, d))
    m, s = _softmax_parts(ctx, x, dim, d)
    out = ctx.out_sizes
    xe = operand(x, d, out)
    e = Unary(UnaryOp.EXP, Binary(BinaryOp.SUB, xe, operand(m, d, out), d), d)
    return ctx.pointwise(Binary(BinaryOp.DIV, e, operand(s, d, out), d))


@register_lowering(aten.log_softmax.int, aten._log_softmax.default, family=FAMILY)
def lower_log_softmax(ctx, x, dim, half_to_float=False, dtype=None):
    d = ctx.out_dtype
    if x.ndim == 0:
        return ctx.pointwise(constant(0, d))
    m, s = _softmax_parts(ctx, x, dim, d)
    out = ctx.out_sizes
    shifted = Binary(BinaryOp.SUB, operand(x, d, out), operand(m, d, out), d)
    return ctx.pointwise(Binary(BinaryOp.SUB, shifted, Unary(UnaryOp.LOG, operand(s, d, out), d), d))



