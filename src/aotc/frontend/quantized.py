"""Decompositions for the `quantized_decomposed` ops that PT2E quantization leaves in a graph
(quantize/dequantize per tensor, channel, token or group, choose_qparams): PyTorch's own
Python kernels for them, traced into the ATen ops they are written in, so aotc computes
exactly what eager does (round half to even, clamp to quant_min/max, the same casts).

torchao's ops (quantize_affine, dequantize_affine, choose_qparams_affine) need nothing here:
they carry CompositeImplicitAutograd kernels, which decompose.py traces already.
"""
from __future__ import annotations

import torch

NAMESPACE = "quantized_decomposed"


def quantized_decomposition(op) -> object | None:
    """The Python kernel torch registered for a `quantized_decomposed` overload (named
    `<op>` for the default overload, `<op>_<overload>` for the others), None for any other
    op or one torch has no such kernel for."""
    if not isinstance(op, torch._ops.OpOverload) or op.namespace != NAMESPACE:
        return None
    from torch.ao.quantization.fx import _decomposed

    base = op._schema.name.split("::", 1)[1]
    name = base if op._overloadname == "default" else f"{base}_{op._overloadname}"
    fn = getattr(_decomposed, name, None)
    return fn if callable(fn) else None
