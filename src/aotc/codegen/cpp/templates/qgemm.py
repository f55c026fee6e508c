"""The call into the shipped int8 GEMM (kernels/gemm_int8.cpp): B packed into the
dot-product layout in the workspace (unless it is a constant stored packed), then the exact
int32 product, of a matrix or of a convolution's patches."""
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
    zero = (f"static_cast<int32_t>({pointer_of(op.a_zero_buffer)}[0])" if op.a_zero_buffer
            else str(op.a_zero))  # a run-time zero point, or the number
    packed = pointer_of(op.b.buffer)  # a constant in the layout already
    if not op.b_packed:
        assert workspace is not None
        b = f"{pointer_of(op.b.buffer)} + {c_index(op.b.offset)}"
        sb_k, sb_n = (c_index(s) for s in op.b.strides)
        taps = op.taps()
        lines.append(f"aotc_qconv_pack_b({k}, {n}, {taps}, {b}, {sb_k}, {sb_n}, {workspace});"
                     if taps > 1 else
                     f"aotc_qgemm_pack_b({k}, {n}, {b}, {sb_k}, {sb_n}, {workspace});")
        packed = workspace
    if op.patches is not None:  # a convolution: its patches read from the input in place
        names = "c, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, taps_major"
        geometry = ", ".join(str(g) for g in (*op.patches, int(op.taps_major)))
        # a tap-major convolution's channels-last input, after B's packing
        copy = (f"{workspace} + {c_index(op.pack_bytes())}" if op.taps_major and workspace
                else "nullptr")
        return lines + [
            "{",
            f"  static const int64_t geometry[14] = {{{geometry}}};  // {names}",
            f"  aotc_qconv_s32({m}, {n}, {a}, geometry, {int(op.a_signed)}, {zero}, "
            f"{packed}, {pointer_of(buf.name)}, {copy});",
            "}"]
    return lines + [f"aotc_qgemm_s32({m}, {n}, {k}, {a}, {c_index(op.a.strides[0])}, "
                    f"{int(op.a_signed)}, {zero}, {packed}, {pointer_of(buf.name)}, {n});"]
