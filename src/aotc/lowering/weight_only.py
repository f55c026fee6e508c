"""Weight-only quantized linears (torchao's Int8WeightOnlyConfig, IntxWeightOnlyConfig) as
the WeightOnlyMatmul template (kernels/gemm_wo.cpp): the float32 activation times the int8
weight as stored, its scales and zero points applied in the kernel (passes/weight_only.py
finds them)."""
from __future__ import annotations

import sympy

from ..dtypes import DType
from ..errors import CompileError
from ..ir.nodes import Operand
from ..ir.symbols import numel
from ..ir.weight_only import WeightOnlyMatmul
from .context import LoweringContext, TensorValue
from .linalg import operand
from .views import remap, reshape_index


def _rows(ctx: LoweringContext, x: TensorValue, m, k) -> Operand:
    """x read as a [m, k] float32 matrix with unit column stride, copied when it must be."""
    if x.dtype is not DType.float32:
        x = ctx.pointwise(x.body, x.sizes, hint=f"{ctx.node_name}_f32")
    name = x.buffer_name()
    if name is None:
        a = operand(ctx, remap(x, (m, k), reshape_index(x.sizes, (m, k))), 0)
        if sympy.sympify(a.strides[2]) == 1:
            return Operand(a.buffer, a.offset, tuple(a.strides[1:]))
        name = _whole(ctx, ctx.pointwise(x.body, x.sizes, hint=f"{ctx.node_name}_rows"), "rows")
    return Operand(name, sympy.Integer(0), (k, sympy.Integer(1)))


def _whole(ctx: LoweringContext, value: TensorValue, what: str) -> str:
    """The buffer a weight part is, as a whole (the kernel reads it contiguous)."""
    name = value.buffer_name()
    if name is None:
        raise CompileError(f"{ctx.target}: the weight-only linear reads its {what} as a whole "
                           f"constant, got a view of sizes {value.sizes}")
    return name


def lower_weight_only_linear(ctx: LoweringContext, x: TensorValue, q: TensorValue,
                             scale: TensorValue, zero: TensorValue | None,
                             bias: TensorValue | None, group: int, bits: int) -> TensorValue:
    """x [..., K] times q [N, K] dequantized per `group` of K ((q - zero) * scale), plus bias:
    [..., N] float32, the weight never dequantized in memory."""
    k = x.sizes[-1]
    m = numel(x.sizes[:-1])
    n = q.sizes[0]
    op = WeightOnlyMatmul(_rows(ctx, x, m, k), _whole(ctx, q, "int8 weight"),
                          _whole(ctx, scale, "scales"),
                          _whole(ctx, zero, "zero points") if zero is not None else None,
                          _whole(ctx, bias, "bias") if bias is not None else None,
                          m, n, k, group, bits)
    out = ctx.emit(op, (m, n), DType.float32, hint=None)
    return remap(out, ctx.out_sizes, reshape_index(out.sizes, ctx.out_sizes))
