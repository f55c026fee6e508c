"""Decompositions for the `quantized_decomposed` ops that PT2E quantization leaves in a graph
(quantize/dequantize per tensor, channel, token or group, choose_qparams): PyTorch's own
Python kernels for them, traced into the ATen ops they are written in, so aotc computes
exactly what eager does (round half to even, clamp to quant_min/max, the same casts). The
overloads taking qparams as 0-dim tensors read them with `.item()` there; here they stay
tensors, with the same arithmetic: a float32 reciprocal of a float32 scale is the float64
one rounded to float32, as eager multiplies by it.

torchao's ops (quantize_affine, dequantize_affine, choose_qparams_affine) need nothing here:
they carry CompositeImplicitAutograd kernels, which decompose.py traces already.
"""
from __future__ import annotations

import torch

NAMESPACE = "quantized_decomposed"


def _scalar(t, dtype):
    """A one-element qparam tensor (0-dim, or choose_qparams' [1]) as the 0-dim `dtype`
    value eager's kernels read with .item(): a float32 computation then stays float32."""
    return t.reshape(()).to(dtype)


def _quantize_tensor(input, scale, zero_point, quant_min, quant_max, dtype):
    """quantize_per_tensor with one-element tensor scale and zero point (and, in .tensor2,
    bounds): 1 / scale in float64, as eager's Python float, then multiplied in float32."""
    if input.dtype in (torch.float16, torch.bfloat16):
        input = input.to(torch.float32)
    inv_scale = _scalar(1.0 / scale.to(torch.float64), torch.float32)
    return torch.clamp(torch.round(input * inv_scale) + _scalar(zero_point, torch.int64),
                       quant_min, quant_max).to(dtype)


def _dequantize_tensor(input, scale, zero_point, quant_min, quant_max, dtype, *, out_dtype=None):
    """dequantize_per_tensor with one-element tensor scale and zero point (and bounds,
    unused)."""
    if input.dtype != dtype:
        raise ValueError(f"dequantize_per_tensor expects a {dtype} input, not {input.dtype}")
    out = out_dtype or torch.float32
    return (input.to(out) - _scalar(zero_point, torch.int64)) * _scalar(scale, out)


def _choose_qparams_tensor(input, quant_min, quant_max, eps, dtype):
    """choose_qparams.tensor: torch.ao's determine_qparams for one per-tensor affine range,
    without its host-side validity check (aminmax of a non-empty tensor always passes it)."""
    min_val, max_val = torch.aminmax(input)
    min_neg = torch.minimum(min_val, torch.zeros_like(min_val))
    max_pos = torch.maximum(max_val, torch.zeros_like(max_val))
    scale = torch.max((max_pos - min_neg) / float(quant_max - quant_min),
                      torch.full((1,), eps, dtype=torch.float32))
    zero_point = quant_min - torch.round(min_neg / scale).to(torch.int)
    zero_point = torch.clamp(zero_point, quant_min, quant_max)
    return scale.to(torch.double), zero_point.to(torch.int64)


TENSOR_QPARAMS = {
    "quantized_decomposed::choose_qparams.tensor": _choose_qparams_tensor,
    "quantized_decomposed::quantize_per_tensor.tensor": _quantize_tensor,
    "quantized_decomposed::quantize_per_tensor.tensor2": _quantize_tensor,
    "quantized_decomposed::dequantize_per_tensor.tensor": _dequantize_tensor,
    "quantized_decomposed::dequantize_per_tensor.tensor2": _dequantize_tensor,
}


def quantized_decomposition(op) -> object | None:
    """What a `quantized_decomposed` overload decomposes into: TENSOR_QPARAMS's rule, else
    the Python kernel torch registered for it (named `<op>` for the default overload,
    `<op>_<overload>` for the others); None for any other op or one with no such kernel."""
    if not isinstance(op, torch._ops.OpOverload) or op.namespace != NAMESPACE:
        return None
    if op.name() in TENSOR_QPARAMS:
        return TENSOR_QPARAMS[op.name()]
    from torch.ao.quantization.fx import _decomposed

    base = op._schema.name.split("::", 1)[1]
    name = base if op._overloadname == "default" else f"{base}_{op._overloadname}"
    fn = getattr(_decomposed, name, None)
    return fn if callable(fn) else None
