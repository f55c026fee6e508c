"""Convolutions of integer tensors (plain and transposed, 1-3 spatial dims, groups): a sum
over the input channels of a group and the kernel taps, in exact integer arithmetic. Float32
convolutions use the Conv template (conv.py); this is the simple generic form for the rest."""
from __future__ import annotations

import sympy

from ..dtypes import DType
from ..ir.expr import Binary, BinaryOp, IndexValue, Node, Where, cast, constant
from ..ir.nodes import ReduceType, Reduction
from ..ir.symbols import FloorDiv, ModIndex, index_vars, reduction_var
from .context import LoweringContext, TensorValue
from .padding import both, clamp_index


def _value(e) -> Node:
    return IndexValue(sympy.sympify(e), DType.int64)


def in_range(e, n) -> Node:
    return Binary(BinaryOp.AND, Binary(BinaryOp.GE, _value(e), constant(0, DType.int64),
                                       DType.bool),
                  Binary(BinaryOp.LT, _value(e), _value(n), DType.bool), DType.bool)


def integer_convolution(ctx: LoweringContext, x: TensorValue, w: TensorValue, bias, stride,
                        padding, dilation, transposed: bool, groups: int,
                        out_sizes) -> TensorValue:
    """out[n, oc, o...] = bias[oc] + sum over ci, k of x[n, ci, pos] * w[...], where a plain
    convolution reads pos = o * stride - padding + k * dilation and a transposed one the
    input position i with i * stride - padding + k * dilation = o; positions outside the
    input add nothing (their index is clamped, the term masked)."""
    d = ctx.out_dtype
    dims = w.ndim - 2
    iv = index_vars(len(out_sizes))
    oc = iv[1]
    ci = reduction_var(0)
    taps = tuple(reduction_var(1 + j) for j in range(dims))
    if transposed:
        in_per_group = w.sizes[0] / groups
        out_per_group = w.sizes[1]
    else:
        in_per_group = w.sizes[1]
        out_per_group = w.sizes[0] / groups
    group = FloorDiv(oc, out_per_group) if groups > 1 else sympy.Integer(0)
    channel = group * in_per_group + ci
    src: list[sympy.Expr] = []
    valid: Node | None = None
    for j in range(dims):
        o, k, n = iv[2 + j], taps[j], x.sizes[2 + j]
        if transposed:
            num = o + padding[j] - k * dilation[j]
            pos = FloorDiv(num, stride[j]) if stride[j] > 1 else num
            ok: Node | None = in_range(num, n * stride[j])
            if stride[j] > 1:
                ok = both(ok, Binary(BinaryOp.EQ, Binary(
                    BinaryOp.REMAINDER, _value(num), constant(stride[j], DType.int64),
                    DType.int64), constant(0, DType.int64), DType.bool))
        else:
            pos = o * stride[j] - padding[j] + k * dilation[j]
            ok = in_range(pos, n)
        src.append(clamp_index(pos, n))
        valid = both(valid, ok)
    xv = cast(x.load((iv[0], channel) + tuple(src)), d)
    if transposed:
        wv = w.load((channel, ModIndex(oc, out_per_group) if groups > 1 else oc) + taps)
    else:
        wv = w.load((oc, ci) + taps)
    term: Node = Binary(BinaryOp.MUL, xv, cast(wv, d), d)
    if valid is not None:
        term = Where(valid, term, constant(0, d), d)
    ranges = (in_per_group,) + tuple(w.sizes[2:])
    total = ctx.emit(Reduction(ReduceType.SUM, ranges, term), out_sizes, d,
                     hint=f"{ctx.node_name}_sum")
    if bias is None:
        return total
    return ctx.pointwise(Binary(BinaryOp.ADD, total.load(iv), cast(bias.load((oc,)), d), d),
                         out_sizes)
