"""The call into the shipped weight-only quantized GEMM (kernels/gemm_wo.cpp, or gemm_w4.cpp
for int4 weights packed two a byte): the weight read as it is stored, dequantized in the
kernel's registers."""
from __future__ import annotations

from ....ir.nodes import Buffer
from ....ir.weight_only import WeightOnlyMatmul
from ..exprs import c_index
from . import emits


@emits(WeightOnlyMatmul)
def weight_only_call(buf: Buffer, pointer_of, workspace: str | None) -> list[str]:
    op = buf.op
    assert isinstance(op, WeightOnlyMatmul)
    m, n, k = c_index(op.m), c_index(op.n), c_index(op.k)
    x = f"{pointer_of(op.x.buffer)} + {c_index(op.x.offset)}"
    zero = pointer_of(op.zero) if op.zero is not None else "nullptr"
    bias = pointer_of(op.bias) if op.bias is not None else "nullptr"
    kernel = "aotc_gemm_w4_f32" if op.q_nibbles else "aotc_gemm_wo_f32"
    return [f"{kernel}({m}, {n}, {k}, {x}, {c_index(op.x.strides[0])}, "
            f"{pointer_of(op.q)}, {op.group}, {pointer_of(op.scale)}, {zero}, {bias}, "
            f"{pointer_of(buf.name)}, {n});"]
