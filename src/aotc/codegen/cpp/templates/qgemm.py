"""The call into the shipped int8 GEMM (kernels/gemm_int8.cpp): B packed into the
dot-product layout in the workspace (unless it is a constant stored packed), then the exact
int32 product."""
from __future__ import annotations

from ....ir.integer import IntMatmul
from ....ir.nodes import Buffer
from ..exprs import c_index
from . import emits


@emits(IntMatmul)
def int_matmul_call(buf: Buffer, pointer_of, workspace: str | None) -> list[str]:
    op = buf.op
    assert isinstance(op, IntMatmul)
    m, n, k = c_index(op.m), c_index(op.n), c_index(op.k)
    a = f"{pointer_of(op.a.buffer)} + {c_index(op.a.offset)}"
    lines = []
    packed = pointer_of(op.b.buffer)  # a constant in the layout already
    if not op.b_packed:
        assert workspace is not None
        b = f"{pointer_of(op.b.buffer)} + {c_index(op.b.offset)}"
        sb_k, sb_n = (c_index(s) for s in op.b.strides)
        lines.append(f"aotc_qgemm_pack_b({k}, {n}, {b}, {sb_k}, {sb_n}, {workspace});")
        packed = workspace
    return lines + [f"aotc_qgemm_s32({m}, {n}, {k}, {a}, {c_index(op.a.strides[0])}, "
                    f"{int(op.a_signed)}, {op.a_zero}, {packed}, {pointer_of(buf.name)}, {n});"]
