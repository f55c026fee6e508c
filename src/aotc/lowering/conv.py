"""Convolutions onto the Conv template: conv1d/2d/3d, convolution, the transposed forms.

Every overload normalizes to one `convolution` call (per-dim parameters, batched input);
a batch norm that follows a convolution is folded into its weights (nn.py asks here).
"""
from __future__ import annotations

import dataclasses

import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.nodes import Buffer, BufferKind, Conv
from ..ir.queries import reads_of
from ..ir.symbols import FloorDiv
from .context import LoweringContext, TensorValue, buffer_value
from .conv_integer import integer_convolution
from .padding import constant_pad
from .registry import register_lowering
from .views import lower_squeeze, lower_unsqueeze

aten = torch.ops.aten
FAMILY = "conv"


def _per_dim(v, n: int) -> tuple[int, ...]:
    vals = [v] * n if isinstance(v, int) else list(v)
    if len(vals) == 1 and n > 1:
        vals = vals * n
    return tuple(int(x) for x in vals)


def convolution(ctx: LoweringContext, x: TensorValue, w: TensorValue, bias, stride, padding,
                dilation, transposed: bool, output_padding, groups: int) -> TensorValue:
    n = w.ndim - 2
    if x.ndim == n + 1:  # an unbatched input: a batch of one, dropped again at the end
        out = convolution(ctx, lower_unsqueeze(ctx, x, 0), w, bias, stride, padding, dilation,
                          transposed, output_padding, groups)
        return lower_squeeze(ctx, out, [0])
    if not 1 <= n <= 3:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"{n}-d convolution")
    integer = x.dtype is DType.int64 and w.dtype is DType.int64
    if not integer and (x.dtype is not DType.float32 or w.dtype is not DType.float32):
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       f"convolution of {x.dtype.name} and {w.dtype.name}: "
                                       "float32 and int64 so far")
    stride, dilation = _per_dim(stride, n), _per_dim(dilation, n)
    if isinstance(padding, str):
        x, padding = _string_padding(ctx, x, padding, w.sizes[2:], dilation)
    padding = _per_dim(padding, n)
    if any(p < 0 for p in padding):
        raise UnsupportedOperatorError(ctx.target, ctx.source, "negative padding")
    x, w = ctx.realize(x), ctx.realize(w)
    b = ctx.realize(bias).buffer_name() if bias is not None else None
    kernel = tuple(int(k) for k in w.sizes[2:])
    out_channels = w.sizes[1] * groups if transposed else w.sizes[0]
    in_size = tuple(x.sizes[2:])
    if transposed:
        op_ = _per_dim(output_padding, n)
        out_size = tuple(sympy.expand((i - 1) * s - 2 * p + d * (k - 1) + o + 1) for i, s, p, d, k, o
                         in zip(in_size, stride, padding, dilation, kernel, op_))
    else:
        out_size = tuple(FloorDiv(sympy.expand(i + 2 * p - d * (k - 1) - 1), s) + 1
                         for i, s, p, d, k in zip(in_size, stride, padding, dilation, kernel))
    out_sizes = (x.sizes[0], out_channels) + out_size
    if ctx.out_sizes and len(ctx.out_sizes) == len(out_sizes):
        out_sizes = ctx.out_sizes  # the export's own expressions for the same sizes
        out_size = tuple(out_sizes[2:])
    if integer:
        return integer_convolution(ctx, x, w, bias, stride, padding, dilation, transposed,
                                   int(groups), out_sizes)
    xb, wb = x.buffer_name(), w.buffer_name()
    assert xb is not None and wb is not None  # realized just above
    conv = Conv(xb, wb, b, x.sizes[0], x.sizes[1], out_channels,
                int(groups), in_size, out_size, kernel, stride, padding, dilation, transposed)
    return ctx.emit(conv, out_sizes, DType.float32)


def _string_padding(ctx, x: TensorValue, mode: str, kernel, dilation):
    """padding='valid' or 'same' as explicit zero padding; an odd total padding puts the
    extra element at the end (as torch does), by padding x itself."""
    if mode == "valid":
        return x, 0
    if mode != "same":
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"padding={mode!r}")
    total = [d * (int(k) - 1) for k, d in zip(kernel, dilation)]
    left = [t // 2 for t in total]
    extra = [t - 2 * lo for t, lo in zip(total, left)]
    if any(extra):
        pads = []
        for e in reversed(extra):  # F.pad order: last dim first, (before, after)
            pads += [0, e]
        x = constant_pad(ctx, x, pads, 0.0)
    return x, left


@register_lowering(aten.convolution.default, aten._convolution.default, family=FAMILY)
def lower_convolution(ctx, x, w, bias, stride, padding, dilation, transposed, output_padding,
                      groups, *unused):
    return convolution(ctx, x, w, bias, stride, padding, dilation, transposed, output_padding,
                       groups)


@register_lowering(aten.conv1d.default, aten.conv2d.default, aten.conv3d.default,
                   aten.conv1d.padding, aten.conv2d.padding, aten.conv3d.padding, family=FAMILY)
def lower_conv(ctx, x, w, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return convolution(ctx, x, w, bias, stride, padding, dilation, False, 0, groups)


@register_lowering(aten.conv_transpose1d.default, aten.conv_transpose2d.input,
                   aten.conv_transpose3d.input, family=FAMILY)
def lower_conv_transpose(ctx, x, w, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                         dilation=1):
    return convolution(ctx, x, w, bias, stride, padding, dilation, True, output_padding, groups)


# ---- batch norm folded into the convolution before it ------------------------------------

def _constant_data(ctx: LoweringContext, v: TensorValue | None):
    """The compile-time value of a constant buffer read whole, else None."""
    if v is None:
        return None
    name = v.buffer_name()
    buf = ctx.program.buffers.get(name) if name else None
    if buf is None or buf.kind is not BufferKind.CONSTANT:
        return None
    return next(c.data for c in ctx.program.constants if c.buffer == name)


def _weights_of(ctx: LoweringContext, buffers) -> tuple[str, ...]:
    """The user's weights constant buffers hold: their names, or those they were folded from."""
    found: list[str] = []
    for c in ctx.program.constants:
        if c.buffer in buffers:
            found += c.folded_from or (c.fqn,)
    return tuple(found)


def _name(v: TensorValue) -> str:
    name = v.buffer_name()
    assert name is not None
    return name


def fold_batch_norm(ctx: LoweringContext, x: TensorValue, weight, bias, mean, var,
                    eps: float) -> TensorValue | None:
    """Inference batch norm of a (non-transposed) convolution with constant weights, as that
    convolution with scaled weights and a shifted bias; None when it does not apply. The
    convolution's unscaled result is dropped by dead-code removal unless something else
    reads it."""
    name = x.buffer_name()
    buf = ctx.program.buffers.get(name) if name else None
    if buf is None or not isinstance(buf.op, Conv) or buf.op.transposed or _clamped(buf.op) \
            or buf.op.residual:
        return None
    conv = buf.op
    w = _constant_data(ctx, buffer_value(ctx.program.buffers[conv.weight]))
    b = _constant_data(ctx, buffer_value(ctx.program.buffers[conv.bias])) if conv.bias else None
    stats = [_constant_data(ctx, v) for v in (mean, var)]
    params = [_constant_data(ctx, v) if v is not None else None for v in (weight, bias)]
    if w is None or (conv.bias and b is None) or any(s is None for s in stats) or any(
            p is None and v is not None for p, v in zip(params, (weight, bias))):
        return None
    m, v = (s.double() for s in stats)
    gamma = params[0].double() if params[0] is not None else torch.ones_like(m)
    beta = params[1].double() if params[1] is not None else torch.zeros_like(m)
    scale = gamma / torch.sqrt(v + eps)
    shape = (-1,) + (1,) * (w.ndim - 1)
    w2 = (w.double() * scale.reshape(shape)).float()
    b2 = ((b.double() if b is not None else torch.zeros_like(m)) - m) * scale + beta
    sources = _weights_of(ctx, [conv.weight, conv.bias] + [
        v.buffer_name() for v in (weight, bias, mean, var) if v is not None])
    folded = Conv(conv.x, _name(ctx.constant(w2, "folded_weight", sources)),
                  _name(ctx.constant(b2.float(), "folded_bias", sources)), conv.batch,
                  conv.in_channels,
                  conv.out_channels, conv.groups, conv.in_size, conv.out_size, conv.kernel,
                  conv.stride, conv.padding, conv.dilation)
    return ctx.emit(folded, buf.sizes, DType.float32, absorbs=buf)


# ---- an activation fused into the convolution before it ---------------------------------

def _clamped(conv: Conv) -> bool:
    """Whether an activation (a clamp or hardswish) is fused into `conv` already."""
    return conv.clamp_min is not None or conv.clamp_max is not None or conv.hardswish


def _activation_target(ctx: LoweringContext, x: TensorValue) -> tuple[Buffer, Conv] | None:
    """The buffer and op of the float32 convolution without an activation whose result x
    is, into which an activation of x can fuse; None when there is none."""
    name = x.buffer_name()
    buf = ctx.program.buffers.get(name) if name else None
    if buf is None or not isinstance(buf.op, Conv) or _clamped(buf.op) \
            or buf.dtype is not DType.float32 or ctx.out_dtype is not DType.float32:
        return None
    return (buf, buf.op) if tuple(x.sizes) == tuple(buf.sizes) else None


def fuse_clamp(ctx: LoweringContext, x: TensorValue, lo, hi) -> TensorValue | None:
    """ReLU, ReLU6, hardtanh or a clamp by numbers of a float32 convolution's result, as
    that convolution with the clamp applied on its finished tiles; None when it does not
    apply. The unclamped convolution is dropped by dead-code removal unless something else
    reads it."""
    target = _activation_target(ctx, x)
    if target is None:
        return None
    if any(b is not None and not isinstance(b, (int, float)) for b in (lo, hi)):
        return None
    if lo is not None and hi is not None and lo > hi:
        return None  # torch's clamp then gives hi everywhere: left to the pointwise form
    buf, conv = target
    fused = dataclasses.replace(conv, clamp_min=None if lo is None else float(lo),
                                clamp_max=None if hi is None else float(hi))
    return ctx.emit(fused, buf.sizes, DType.float32, absorbs=buf)


def fuse_hardswish(ctx: LoweringContext, x: TensorValue) -> TensorValue | None:
    """hardswish(x) where x is a float32 convolution's result without an activation: that
    convolution with hardswish applied on its finished tiles (MobileNetV3's blocks); None
    when it does not apply."""
    target = _activation_target(ctx, x)
    if target is None:
        return None
    buf, conv = target
    return ctx.emit(dataclasses.replace(conv, hardswish=True), buf.sizes, DType.float32,
                    absorbs=buf)


def _read_elsewhere(ctx: LoweringContext, name: str) -> bool:
    """Whether an op lowered so far reads buffer `name`: a convolution absorbed into a fused
    one is then computed twice, once for that reader and once fused."""
    return any(buf.op is not None and name in reads_of(buf)
               for buf in ctx.program.buffers.values())


def fuse_residual(ctx: LoweringContext, a, b) -> TensorValue | None:
    """a + b where one of them is an unclamped float32 convolution's result and the other a
    float32 buffer of the same sizes: that convolution with the other added on its finished
    tiles (before any clamp that fuses next); None when it does not apply. Where both are
    convolutions it takes the one nothing else reads (in an inverted-residual network the
    block's input is the previous block's convolution, which the block's first convolution
    reads too), and it fuses into neither where both are read elsewhere: a convolution
    computed twice costs more than the add it saves."""
    if ctx.out_dtype is not DType.float32:
        return None
    candidates = []
    for conv_side, other in ((a, b), (b, a)):
        if not isinstance(conv_side, TensorValue) or not isinstance(other, TensorValue):
            return None
        name, other_name = conv_side.buffer_name(), other.buffer_name()
        buf = ctx.program.buffers.get(name) if name else None
        if buf is None or not isinstance(buf.op, Conv) or _clamped(buf.op) or buf.op.residual \
                or buf.dtype is not DType.float32 or other_name is None or other_name == name \
                or other.dtype is not DType.float32:
            continue
        if tuple(other.sizes) != tuple(buf.sizes) or tuple(ctx.out_sizes) != tuple(buf.sizes):
            continue
        candidates.append((buf, buf.op, other_name))
    for buf, conv, other_name in candidates:
        if not _read_elsewhere(ctx, buf.name):
            fused = dataclasses.replace(conv, residual=other_name)
            return ctx.emit(fused, buf.sizes, DType.float32, absorbs=buf)
    return None
