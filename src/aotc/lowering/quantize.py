"""Integer GEMMs of quantized programs, as the IntMatmul template (kernels/gemm_int8.cpp):
aten._int_mm, an (M, K) x (K, N) product of 8-bit integers summed exactly in int32, and the
quantized linears and convolutions passes/quantized.py finds, with their float epilogue."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..ir.expr import Binary, BinaryOp, Node, Where, cast, constant
from ..ir.integer import IntMatmul
from ..ir.nodes import Operand
from ..ir.symbols import index_vars, numel
from .context import LoweringContext, TensorValue
from .conv_integer import in_range
from .linalg import operand, reduction_matmul
from .padding import both, clamp_index
from .registry import register_lowering
from .views import remap, reshape_index

# the fewest input channels a convolution's tap-major (channels-last) patches are used for
TAPS_MAJOR_CHANNELS = 8


@register_lowering(torch.ops.aten._int_mm.default, family="linalg")
def lower_int_mm(ctx: LoweringContext, a: TensorValue, b: TensorValue) -> TensorValue:
    """out[m, n] = sum over k of int32(a[m, k]) * int32(b[k, n]); a may be int8 or uint8
    (torchao shifts activations into uint8 on CPU), b int8. Other dtypes take the generic
    sum over k."""
    if a.dtype not in (DType.int8, DType.uint8) or b.dtype is not DType.int8:
        return reduction_matmul(ctx, a, b, ctx.out_sizes, DType.int32)
    (m, k), n = a.sizes, b.sizes[1]
    a_op = _rows(ctx, a, m, k)
    b_op = _rows_cols(operand(ctx, b, 0))
    return _product(ctx, a_op, b_op, m, n, k, a.dtype is DType.int8, 0, ctx.out_sizes,
                    result=True)


def _rows_cols(o: Operand) -> Operand:
    """A 2-D operand's (row, column) strides (its batch stride is 0)."""
    assert sympy.sympify(o.strides[0]) == 0
    return Operand(o.buffer, o.offset, tuple(o.strides[1:]))


def _scalar(value: TensorValue) -> Node:
    """The value of a one-element tensor (a run-time scale or zero point)."""
    return value.load(tuple(sympy.Integer(0) for _ in value.sizes))


def _scaled(ctx: LoweringContext, acc: Node, channel, w_scale, x_scale: float | TensorValue,
            bias) -> Node:
    """acc * (x_scale * w_scale[channel]) + bias[channel] in float32: the dequantized
    product (acc is exact; eager sums the dequantized terms, which differs by rounding).
    A run-time x_scale (dynamic quantization) is read as float32, as eager's float32
    arithmetic takes its .item()."""
    f = DType.float32
    x: Node = constant(x_scale, f) if isinstance(x_scale, float) else cast(_scalar(x_scale), f)
    if isinstance(w_scale, float) and isinstance(x_scale, float):
        scale: Node = constant(x_scale * w_scale, f)
    elif isinstance(w_scale, float):
        scale = Binary(BinaryOp.MUL, constant(w_scale, f), x, f)
    else:
        scale = Binary(BinaryOp.MUL, cast(w_scale.load((channel,)), f), x, f)
    value: Node = Binary(BinaryOp.MUL, cast(acc, f), scale, f)
    if bias is not None:
        value = Binary(BinaryOp.ADD, value, cast(bias.load((channel,)), f), f)
    return value


def _product(ctx, a: Operand, b: Operand, m, n, k, a_signed: bool, a_zero: int | TensorValue,
             sizes=None, result: bool = False) -> TensorValue:
    """The exact int32 product (a - a_zero) @ b of a [M, K] 8-bit activation and a [K, N]
    int8 b, both (row, column) strided operands (b a constant weight the prepack stage
    stores packed); a_zero a number or a one-element tensor the kernel reads at run time.
    The sums are [m, n], or `sizes` with as many elements; `result`: they are the op's
    own result (no `_acc` name)."""
    if isinstance(a_zero, int):
        mm = IntMatmul(a, b, m, n, k, a_signed, a_zero=a_zero)
    else:
        zero = ctx.realize(a_zero).buffer_name()
        assert zero is not None
        mm = IntMatmul(a, b, m, n, k, a_signed, a_zero_buffer=zero)
    return ctx.emit(mm, sizes or (m, n), DType.int32,
                    hint=None if result else f"{ctx.node_name}_acc")


def _rows(ctx, x: TensorValue, m, k) -> Operand:
    """x read as a [m, k] matrix with unit column stride (the kernel reads rows of A in
    place); a whole buffer is read as it is, anything else copied when it must be."""
    name = x.buffer_name()
    if name is None:
        a = _rows_cols(operand(ctx, remap(x, (m, k), reshape_index(x.sizes, (m, k))), 0))
        if a.strides[1] == 1:
            return a
        name = ctx.pointwise(x.body, x.sizes, hint=f"{ctx.node_name}_rows").buffer_name()
    assert name is not None
    return Operand(name, sympy.Integer(0), (k, sympy.Integer(1)))


def _columns(ctx, w: TensorValue, n, k) -> Operand:
    """A weight [N, ...] (K elements per output channel) read as the [K, N] b of a product."""
    a = _rows(ctx, w, n, k)
    return Operand(a.buffer, a.offset, (a.strides[1], a.strides[0]))


def lower_quantized_linear(ctx: LoweringContext, x_q: TensorValue, w_q: TensorValue, w_scale,
                           x_scale: float | TensorValue, x_zero: int | TensorValue,
                           bias) -> TensorValue:
    """linear(dequantize(x_q), dequantize(w_q), bias) (passes/quantized.py) as an integer
    product of the 8-bit values and a float32 epilogue; the activation's scale and zero
    point numbers or run-time one-element tensors."""
    k = x_q.sizes[-1]
    m = numel(x_q.sizes[:-1])
    n = w_q.sizes[0]
    # the sums laid out as the output [..., n] (the rows of a contiguous [m, n]), so that
    # the epilogue and what follows it read them at the output's own index
    acc = _product(ctx, _rows(ctx, x_q, m, k), _columns(ctx, w_q, n, k), m, n, k,
                   x_q.dtype is DType.int8, x_zero, tuple(ctx.out_sizes))
    iv = index_vars(len(ctx.out_sizes))
    return ctx.pointwise(_scaled(ctx, acc.load(iv), iv[-1], w_scale, x_scale, bias),
                         ctx.out_sizes)


def lower_quantized_conv(ctx: LoweringContext, x_q: TensorValue, w_q: TensorValue, w_scale,
                         x_scale: float, x_zero: int, bias, stride, padding,
                         dilation) -> TensorValue:
    """conv2d(dequantize(x_q), dequantize(w_q), bias) with one group as an integer product:
    the activation's patches as rows [N*OH*OW, C*KH*KW] (outside the input: the zero point,
    which the product subtracts to 0), times the weight read as [C*KH*KW, OC]. The kernel
    gathers the patches from the activation itself and writes the sums channels first;
    with spatial sizes known only at run time, the patches are copied out first."""
    n, c = x_q.sizes[:2]
    oc, _, kh, kw = w_q.sizes
    oh, ow = ctx.out_sizes[2:]
    k = c * kh * kw
    geometry = tuple(sympy.sympify(g) for g in (c, *x_q.sizes[2:], kh, kw, oh, ow, *stride,
                                                 *padding, *dilation))
    b, o, y, x = index_vars(4)
    if all(g.is_Integer for g in geometry):
        rows = ctx.realize(x_q).buffer_name()
        assert rows is not None
        mm = IntMatmul(Operand(rows, sympy.Integer(0), (k, sympy.Integer(1))),
                       _columns(ctx, w_q, oc, k), n * oh * ow, oc, k, x_q.dtype is DType.int8,
                       a_zero=x_zero, patches=tuple(int(g) for g in geometry),
                       taps_major=_taps_major(int(c)))
        acc = ctx.emit(mm, (n, oc, oh, ow), DType.int32, hint=f"{ctx.node_name}_acc")
        total = acc.load((b, o, y, x))
    else:
        acc = _explicit_patches(ctx, x_q, w_q, x_zero, stride, padding, dilation)
        total = acc.load(((b * oh + y) * ow + x, o))
    return ctx.pointwise(_scaled(ctx, total, o, w_scale, x_scale, bias), ctx.out_sizes)


def _taps_major(channels: int) -> bool:
    """Whether a convolution's patches are gathered tap-major from a channels-last copy of
    its input (whole taps copied per row): for channels in whole 4-byte groups, at least
    TAPS_MAJOR_CHANNELS of them. A stem's few channels are gathered from the input as it is,
    a column at a time (masked vector loads), which measured twice as fast for 3 channels
    as 4-byte taps (ResNet's 7x7 stride-2 stem at 224x224, one thread)."""
    return channels % 4 == 0 and channels >= TAPS_MAJOR_CHANNELS


def _explicit_patches(ctx: LoweringContext, x_q: TensorValue, w_q: TensorValue, x_zero: int,
                      stride, padding, dilation) -> TensorValue:
    """The int32 product of a convolution through a buffer of its patches [N, OH, OW, C, KH,
    KW] (the form for spatial sizes known only at run time)."""
    n, c = x_q.sizes[:2]
    oc, _, kh, kw = w_q.sizes
    oh, ow = ctx.out_sizes[2:]
    b, y, x, ci, ty, tx = index_vars(6)
    src, valid = [], None
    for o, t, size, j in ((y, ty, x_q.sizes[2], 0), (x, tx, x_q.sizes[3], 1)):
        pos = o * stride[j] - padding[j] + t * dilation[j]
        if padding[j]:
            valid = both(valid, in_range(pos, size))
            pos = clamp_index(pos, size)
        src.append(pos)
    patch: Node = x_q.load((b, ci) + tuple(src))
    if valid is not None:
        patch = Where(valid, patch, constant(x_zero, x_q.dtype), x_q.dtype)
    patches = ctx.pointwise(patch, (n, oh, ow, c, kh, kw), hint=f"{ctx.node_name}_patches")
    m, k = n * oh * ow, c * kh * kw
    return _product(ctx, _rows(ctx, patches, m, k), _columns(ctx, w_q, oc, k), m, oc, k,
                    x_q.dtype is DType.int8, x_zero)
