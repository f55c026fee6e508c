"""The weight-only quantized linear template: float32 activations times an int8 weight
(int4 values held one per byte, or packed two a byte) dequantized per group inside
kernels/gemm_wo.cpp (gemm_w4.cpp), never stored as floats (codegen:
codegen/cpp/templates/wo_gemm.py)."""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from .nodes import Operand, Template


@dataclass(frozen=True)
class WeightOnlyMatmul(Template):
    """out[m, n] = sum over k of x[m, k] * ((q[n, k] - zero[n, k / group]) * scale[n, k /
    group]) + bias[n], in float32, out [m, n] contiguous.

    `x` is float32 with unit column stride (rows `x.strides[0]` apart); q, scale, zero and
    bias name whole contiguous buffers: q int8 [n, k], scale float32 and zero int8 [n, k /
    group] (zero None: all 0), bias float32 [n] or None. `group` divides k (k itself: one
    scale per output channel)."""

    x: Operand  # (row, column) strides
    q: str
    scale: str
    zero: str | None
    bias: str | None
    m: sympy.Expr
    n: sympy.Expr
    k: sympy.Expr
    group: int
    bits: int = 8  # the range of q's values: 8 (int8) or 4 (int4 held in int8)
    # q stored two int4 values a byte (its ConstantSpec.packing, a PackedInt4), read by
    # kernels/gemm_w4.cpp; scheduler/prepack.py sets it
    q_nibbles: bool = False

    def reads(self) -> tuple[str, ...]:
        names = (self.x.buffer, self.q, self.scale, self.zero, self.bias)
        return tuple(dict.fromkeys(b for b in names if b is not None))

    def flops(self) -> sympy.Expr:
        return 2 * self.m * self.n * self.k

    def describe(self) -> str:
        zero = f" - {self.zero}" if self.zero else ""
        bias = f" + {self.bias}" if self.bias else ""
        packed = ", two a byte" if self.q_nibbles else ""
        return (f"weight-only matmul {self.x.buffer} x (s{self.bits} {self.q}{packed}{zero}) * "
                f"{self.scale} (group {self.group}){bias} [{self.m}, {self.k}] x "
                f"[{self.k}, {self.n}] -> f32")
