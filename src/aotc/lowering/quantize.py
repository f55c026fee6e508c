"""Integer GEMM of quantized linears: aten._int_mm, an (M, K) x (K, N) product of 8-bit
integers summed exactly in int32. A sum over k in the generic reduction form; the float32
GEMM template (linalg.py) does not take integers."""
from __future__ import annotations

import torch

from ..dtypes import DType
from .context import LoweringContext, TensorValue
from .linalg import reduction_matmul
from .registry import register_lowering


@register_lowering(torch.ops.aten._int_mm.default, family="linalg")
def lower_int_mm(ctx: LoweringContext, a: TensorValue, b: TensorValue) -> TensorValue:
    """out[m, n] = sum over k of int32(a[m, k]) * int32(b[k, n]); a may be int8 or uint8
    (torchao shifts activations into uint8 on CPU), b int8."""
    return reduction_matmul(ctx, a, b, ctx.out_sizes, DType.int32)
