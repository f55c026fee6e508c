"""Find the quantized products of PT2E graphs: `linear` or `conv2d` of a dequantized 8-bit
activation and a dequantized int8 weight, as X86InductorQuantizer and XNNPACKQuantizer
write them, so that import lowers each as an integer product (lowering/quantize.py).

    x = dequantize_per_tensor(x_q, s_x, z_x, ...)              8-bit activation
    w = dequantize_per_channel(w_q, s_w, z_w, axis 0, ...)     int8 weight (or per tensor)
    y = linear(x, w, bias) | conv2d(x, w, bias, stride, padding, dilation, groups=1)

matches when w_q and its scales are weights with zero points all 0 (symmetric weights), the
activation's scale and zero point are numbers (static quantization) or, for a linear, the
one-element tensors of `dequantize_per_tensor.tensor` that `choose_qparams.tensor` computes
at run time (dynamic quantization: X86InductorQuantizer's is_dynamic), and each dequantize
has no other reader (an activation's dequantize may feed several products, every one of
them matched, as the q, k and v projections of dynamic quantization read one). y
stays a float tensor: the requantize that usually follows is an ordinary pointwise op,
which fusion runs in the same kernel as the product's epilogue.

Also `quantize(max_pool2d(dequantize(x_q, s, z)), s, z)` (a ResNet stem's pool between two
quantized convolutions): the max of x_q itself, so that the product before it writes
8-bit values and nothing float lies between the two.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import fx

from ..frontend.freezing import weight_placeholders
from ..lowering.quantize import lower_quantized_conv, lower_quantized_linear
from ..lowering.registry import lookup

DQ_TENSOR = "quantized_decomposed.dequantize_per_tensor.default"
DQ_TENSOR_QPARAMS = "quantized_decomposed.dequantize_per_tensor.tensor"
DQ_CHANNEL = "quantized_decomposed.dequantize_per_channel.default"
Q_TENSOR = "quantized_decomposed.quantize_per_tensor.default"
aten = torch.ops.aten
PRODUCTS = (aten.linear.default, aten.conv2d.default)
ACTIVATIONS = (torch.uint8, torch.int8)


@dataclass(frozen=True)
class QuantizedProduct:
    """One quantized linear or convolution: `output` computed from these operands."""

    output: fx.Node
    x_q: fx.Node  # the 8-bit activation
    x_scale: float | fx.Node  # a number, or a one-element tensor computed at run time
    x_zero: int | fx.Node
    w_q: fx.Node  # the int8 weight, [out, in] or [out, in, kh, kw]
    w_scale: fx.Node | float  # per output channel (a weight), or one number
    bias: fx.Node | None
    conv: tuple | None  # (stride, padding, dilation) of a convolution
    inner: tuple[fx.Node, ...]
    keeps_weights = True  # the int8 weight reaches the kernel as it is, never dequantized

    def lower(self, imp):
        ctx = imp.context(self.output, self.output.target)
        scale = self.w_scale if isinstance(self.w_scale, float) else imp.arg(self.w_scale)
        bias = imp.arg(self.bias) if self.bias is not None else None
        x_scale, x_zero = (v if isinstance(v, (int, float)) else imp.arg(v)
                           for v in (self.x_scale, self.x_zero))
        args = (ctx, imp.arg(self.x_q), imp.arg(self.w_q), scale, x_scale, x_zero, bias)
        if self.conv is None:
            return lower_quantized_linear(*args)
        return lower_quantized_conv(*args, *self.conv)

    def describe(self) -> str:
        kind = "linear" if self.conv is None else f"conv2d{self.conv}"
        scale = self.w_scale if isinstance(self.w_scale, float) else self.w_scale.name
        bias = f" + {self.bias.name}" if self.bias is not None else ""
        x_scale, x_zero = (v.name if isinstance(v, fx.Node) else f"{v:g}"
                           for v in (self.x_scale, self.x_zero))
        return (f"{self.output.name} = {kind}({self.x_q.name} (s {x_scale}, z {x_zero}), "
                f"{self.w_q.name} (s {scale})){bias}")


@dataclass(frozen=True)
class QuantizedMaxPool:
    """quantize(max_pool2d(dequantize(x_q, s, z)), s, z): the max of the 8-bit values
    themselves (quantization is monotonic and, with the same scale and zero point, gives
    back each value it dequantized), with no float tensor in between."""

    output: fx.Node  # the quantize
    x_q: fx.Node
    pool_args: tuple  # max_pool2d's arguments after its input
    inner: tuple[fx.Node, ...]  # the pool, and the dequantize when nothing else reads it
    keeps_weights = False

    def lower(self, imp):
        rule = lookup(aten.max_pool2d.default)
        assert rule is not None
        return rule.fn(imp.context(self.output, aten.max_pool2d.default), imp.arg(self.x_q),
                       *self.pool_args)

    def describe(self) -> str:
        return f"{self.output.name} = max_pool2d({self.x_q.name}, {list(self.pool_args)})"


def _max_pool(node: fx.Node) -> QuantizedMaxPool | None:
    """The QuantizedMaxPool whose quantize is `node`, if it is one."""
    if str(node.target) != Q_TENSOR or not isinstance(node.args[0], fx.Node):
        return None
    pool = node.args[0]
    dq = pool.args[0] if pool.target is aten.max_pool2d.default else None
    if not isinstance(dq, fx.Node) or str(dq.target) != DQ_TENSOR or \
            not _sole_reader(pool, node) or dq.kwargs.get("out_dtype") not in (None, torch.float32):
        return None
    qparams = tuple(node.args[1:6])
    val = _val(dq.args[0])
    if tuple(dq.args[1:6]) != qparams or qparams[-1] not in ACTIVATIONS or val is None or \
            val.dtype != qparams[-1] or node.kwargs or pool.kwargs:
        return None
    inner = (pool, dq) if _sole_reader(dq, pool) else (pool,)
    return QuantizedMaxPool(node, dq.args[0], tuple(pool.args[1:]), inner)


def _val(node) -> torch.Tensor | None:
    v = node.meta.get("val") if isinstance(node, fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None


def _sole_reader(node: fx.Node, reader: fx.Node) -> bool:
    return list(node.users) == [reader]


def _one_element(node, dtypes) -> bool:
    """Whether node is a run-time tensor of one element of one of these dtypes."""
    val = _val(node)
    return val is not None and val.numel() == 1 and val.dtype in dtypes


def _activation(node, reader, tensor_qparams: bool) -> tuple | None:
    """(x_q, scale, zero point) of a per-tensor dequantize of an 8-bit activation: numbers,
    or with tensor_qparams also one-element tensors (dequantize_per_tensor.tensor)."""
    targets = (DQ_TENSOR, DQ_TENSOR_QPARAMS) if tensor_qparams else (DQ_TENSOR,)
    if not isinstance(node, fx.Node) or str(node.target) not in targets or \
            any(u.target not in PRODUCTS for u in node.users) or \
            node.kwargs.get("out_dtype") not in (None, torch.float32):
        return None
    x_q, scale, zero, _, _, dtype = node.args[:6]
    val = _val(x_q)
    if val is None or val.dtype != dtype or dtype not in ACTIVATIONS:
        return None
    if str(node.target) == DQ_TENSOR_QPARAMS:
        ok = _one_element(scale, (torch.float32, torch.float64)) and \
            _one_element(zero, (torch.int32, torch.int64))
    else:
        ok = isinstance(scale, float) and isinstance(zero, int)
    return (x_q, scale, zero) if ok else None


def _weight(node, reader, weights: dict) -> tuple | None:
    """(w_q, scale) of a dequantized int8 weight with zero points all 0."""
    if not isinstance(node, fx.Node) or not _sole_reader(node, reader) or \
            node.kwargs.get("out_dtype") not in (None, torch.float32):
        return None
    target = str(node.target)
    if target not in (DQ_TENSOR, DQ_CHANNEL):
        return None
    w_q = node.args[0]
    if w_q not in weights or weights[w_q][0].dtype != torch.int8:
        return None
    if target == DQ_TENSOR:
        _, scale, zero, _, _, dtype = node.args[:6]
        ok = isinstance(scale, float) and zero == 0 and dtype == torch.int8
        return (w_q, scale) if ok else None
    _, scales, zeros, axis, _, _, dtype = node.args[:7]
    if axis != 0 or dtype != torch.int8 or scales not in weights:
        return None
    if weights[scales][0].ndim != 1:
        return None
    if zeros is not None and (zeros not in weights or bool(weights[zeros][0].any())):
        return None
    return w_q, scales


def _conv_args(node: fx.Node) -> tuple | None:
    """(stride, padding, dilation) of a 2-d convolution with one group, else None."""
    args = list(node.args) + [None] * (7 - len(node.args))
    stride, padding, dilation, groups = (node.kwargs.get(k, a) for k, a in
                                         zip(("stride", "padding", "dilation", "groups"),
                                             args[3:7]))
    if (groups or 1) != 1 or isinstance(padding, str):
        return None
    return tuple(tuple(v) if v is not None else d for v, d in
                 ((stride, (1, 1)), (padding, (0, 0)), (dilation, (1, 1))))


def _match(node: fx.Node, weights: dict) -> QuantizedProduct | None:
    if node.target not in PRODUCTS or len(node.args) < 2:
        return None
    out = _val(node)
    if out is None or out.dtype != torch.float32:
        return None
    act = _activation(node.args[0], node, tensor_qparams=node.target is aten.linear.default)
    wt = _weight(node.args[1], node, weights)
    if act is None or wt is None:
        return None
    bias = node.args[2] if len(node.args) > 2 else node.kwargs.get("bias")
    if bias is not None and (_val(bias) is None or _val(bias).dtype != torch.float32):
        return None
    conv = None
    if node.target is aten.conv2d.default:
        conv = _conv_args(node)
        if conv is None or _val(node.args[0]).ndim != 4:
            return None
    return QuantizedProduct(node, act[0], act[1], act[2], wt[0], wt[1], bias, conv,
                            (node.args[0], node.args[1]))


def find_quantized(ep: torch.export.ExportedProgram) -> dict:
    """Each quantized product (and max pool of quantized values) of the program's graph,
    by output node."""
    weights = weight_placeholders(ep)
    found = {}
    for node in ep.graph.nodes:
        if node.op == "call_function":
            chain = _match(node, weights) or _max_pool(node)
            if chain is not None:
                found[node] = chain
    # an activation's dequantize stays out of the graph only when every reader is a product
    # found here (then none computes it); else none of its readers is one
    while True:
        partial = {n for n, c in found.items() if any(u not in found for u in c.inner[0].users)}
        if not partial:
            return found
        for n in partial:
            del found[n]


def format_quantized(chains: dict) -> str:
    """One line per product or pool, for tests and dumps."""
    lines = [c.describe() for c in chains.values()]
    return "\n".join(lines) + ("\n" if lines else "")
