"""Integer GEMM of quantized linears: aten._int_mm, an (M, K) x (K, N) product of 8-bit
integers summed exactly in int32, as the IntMatmul template (kernels/gemm_int8.cpp)."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..ir.integer import IntMatmul
from ..ir.nodes import Operand
from .context import LoweringContext, TensorValue
from .linalg import operand, reduction_matmul
from .registry import register_lowering


@register_lowering(torch.ops.aten._int_mm.default, family="linalg")
def lower_int_mm(ctx: LoweringContext, a: TensorValue, b: TensorValue) -> TensorValue:
    """out[m, n] = sum over k of int32(a[m, k]) * int32(b[k, n]); a may be int8 or uint8
    (torchao shifts activations into uint8 on CPU), b int8. Other dtypes take the generic
    sum over k."""
    if a.dtype not in (DType.int8, DType.uint8) or b.dtype is not DType.int8:
        return reduction_matmul(ctx, a, b, ctx.out_sizes, DType.int32)
    a_op = operand(ctx, a, 0)
    if a_op.strides[2] != 1:  # the kernel reads rows of A in place: give it unit columns
        a_op = operand(ctx, ctx.pointwise(a.body, a.sizes, hint=f"{ctx.node_name}_rows"), 0)
    b_op = operand(ctx, b, 0)
    m, k = a.sizes
    n = b.sizes[1]
    mm = IntMatmul(_rows_cols(a_op), _rows_cols(b_op), m, n, k, a.dtype is DType.int8)
    return ctx.emit(mm, ctx.out_sizes, DType.int32)


def _rows_cols(o: Operand) -> Operand:
    """A 2-D operand's (row, column) strides (its batch stride is 0)."""
    assert sympy.sympify(o.strides[0]) == 0
    return Operand(o.buffer, o.offset, tuple(o.strides[1:]))
