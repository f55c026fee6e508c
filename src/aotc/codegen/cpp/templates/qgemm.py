"""The call into the shipped int8 GEMM (kernels/gemm_int8.cpp): B packed into the
dot-product layout in the workspace (unless it is a constant stored packed), then the exact
int32 product, of a matrix or of a convolution's patches; and its fused epilogue, a C++
function the kernel hands each finished block of sums (aotc_qgemm_epilogue in
kernels/aotc_kernels.h) that writes the buffer's values: the dequantize, bias, residual,
activation and requantize of a quantized layer, in one pass over sums still in cache.

A product's block comes row-major, a convolution's transposed (channel-major, its positions
within one image) unless it writes channels last, so the inner loop runs along the output's
contiguous axis either way: a channels-first convolution's over the positions of one channel
plane (H and W looped as one where every load allows it, scheduler/access.merge_inner_axes),
a product's (or channels-last convolution's) over the columns of a row."""
from __future__ import annotations

import sympy

from ....ir.integer import IntMatmul
from ....ir.nodes import Buffer, Program
from ....ir.symbols import flat_offset, index_vars
from ....scheduler.access import merge_inner_axes
from ..code import CodeBuffer
from ..exprs import BodyEmitter, c_index
from ..kernels import describe
from ..packing import int8_pack_call
from . import emits, emits_helpers, epilogue_simd
from .gemm import epilogue_name, epilogue_table, unpack_table, unravel_row


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
        lines.append(int8_pack_call(k, n, op.taps(), op.row_taps(), b, sb_k, sb_n, workspace))
        packed = workspace
    # the sums go to the buffer, or through the epilogue, which writes the buffer itself
    c, epilogue, setup = pointer_of(buf.name), "nullptr", []
    if op.epilogue is not None:
        setup, epilogue = epilogue_table(buf, pointer_of, [buf.name, *op.epilogue_reads()],
                                         "aotc_qgemm_epilogue")
        c = "nullptr"
    if op.patches is not None:  # a convolution: its patches read from the input in place
        names = ("c, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, order (1 tap-major, 2 row "
                 "groups), x_last, c_last")
        order = 1 if op.taps_major else 2 if op.row_groups else 0
        geometry = ", ".join(str(g) for g in (*op.patches, order,
                                               int(op.x_channels_last),
                                               int(op.out_channels_last)))
        # a tap-major convolution's channels-last copy of its input, after B's packing
        copy = (f"{workspace} + {c_index(op.pack_bytes())}"
                if op.taps_major and not op.x_channels_last and workspace else "nullptr")
        return lines + [
            "{",
            f"  static const int64_t geometry[16] = {{{geometry}}};  // {names}",
            *("  " + s for s in setup),
            f"  aotc_qconv_s32({m}, {n}, {a}, geometry, {int(op.a_signed)}, {zero}, "
            f"{packed}, {c}, {copy}, {epilogue});",
            "}"]
    call = (f"aotc_qgemm_s32({m}, {n}, {k}, {a}, {c_index(op.a.strides[0])}, "
            f"{int(op.a_signed)}, {zero}, {packed}, {c}, {n}, {epilogue});")
    if not setup:
        return lines + [call]
    return lines + ["{"] + ["  " + s for s in setup + [call]] + ["}"]


@emits_helpers(IntMatmul)
def int_matmul_helpers(code: CodeBuffer, program: Program, buf: Buffer) -> None:
    if isinstance(buf.op, IntMatmul) and buf.op.epilogue is not None:
        emit_epilogue(code, program, buf)


def emit_epilogue(code: CodeBuffer, program: Program, buf: Buffer) -> None:
    """void epilogue_<buf>(ctx, sums, ld, row, col, rows, cols): the epilogue body of each
    element of the block, written to the buffer (the table's entry 1)."""
    op = buf.op
    assert isinstance(op, IntMatmul) and op.epilogue is not None
    others = op.epilogue_reads()
    sizes_of = {n: program.buffers[n].sizes for n in others}
    sizes, body_node = tuple(buf.sizes), op.epilogue
    iv = index_vars(len(sizes))
    merged = None
    channels_first = op.patches is not None and not op.out_channels_last
    if channels_first:
        merged = merge_inner_axes(body_node, iv, sizes,
                                  {**sizes_of, op.epilogue_source: sizes})
    if merged is not None:
        sizes, body_node = tuple(merged[0]), merged[1]
    body = BodyEmitter(sizes_of, lambda n: n, {op.epilogue_source: "acc"})
    result = body.value(body_node)
    t = buf.dtype.ctype
    code.lines_of(describe(buf))
    with code.block(f"void {epilogue_name(buf)}(const void *ctx, const int32_t *sums, "
                    "int64_t ld, int64_t row, int64_t col, int64_t rows, int64_t cols)"):
        unpack_table(code, program, others, first=2)
        code.line(f"{t} *__restrict out = static_cast<{t} *>(const_cast<void *>(args[1]));")
        vector = None if channels_first else epilogue_simd.vector_rows(
            body_node, buf.dtype, sizes, iv, sizes_of, op.epilogue_source)
        if vector is not None:
            code.line(f"#if {epilogue_simd.GUARD}")
            vector.emit(code, lambda c: unravel_row(c, sizes, iv, "row + r"))
            code.line("#else")
        if channels_first:
            _convolution_loops(code, sizes, iv, merged is not None, op.patches[6])
        else:
            _product_loops(code, sizes, iv)
        code.line("(void)acc;")
        code.lines_of(body.lines)
        code.line(f"out[{c_index(flat_offset(iv, sizes))}] = {result};")
        for _ in range(2):
            code.level -= 1
            code.line("}")
        if vector is not None:
            code.line("#endif")
    code.line()


def _convolution_loops(code: CodeBuffer, sizes, iv, merged: bool, ow: int) -> None:
    """Opens the loops over a convolution's transposed block: a channel, then its positions
    (b, oy, ox) of one image, counted from `row`."""
    plane = sympy.expand(sizes[2] * sizes[3])
    code.line(f"const int64_t {iv[0]} = row / ({c_index(plane)});")
    code.line(f"const int64_t first = row % ({c_index(plane)});")
    code.line(f"(void){iv[0]};")
    code.line("for (int64_t j = 0; j < cols; ++j) {")
    code.level += 1
    code.line(f"const int64_t {iv[1]} = col + j;")
    code.line(f"(void){iv[1]};")
    code.line("const int32_t *__restrict line = sums + j * ld;")
    code.line("#pragma omp simd")
    code.line("for (int64_t r = 0; r < rows; ++r) {")
    code.level += 1
    if merged:  # H and W as one axis: dim 2 is 0, dim 3 the position in the plane
        code.line(f"constexpr int64_t {iv[2]} = 0;")
        code.line(f"const int64_t {iv[3]} = first + r;")
    else:
        code.line(f"const int64_t {iv[2]} = (first + r) / {ow};")
        code.line(f"const int64_t {iv[3]} = (first + r) % {ow};")
    code.line(f"(void){iv[2]};")
    code.line("const int32_t acc = line[r];")


def _product_loops(code: CodeBuffer, sizes, iv) -> None:
    """Opens the loops over a product's row-major block: a row (its leading index
    variables unravelled), then its columns (the last)."""
    code.line("for (int64_t r = 0; r < rows; ++r) {")
    code.level += 1
    unravel_row(code, sizes, iv, "row + r")
    code.line("#pragma omp simd")
    code.line("for (int64_t j = 0; j < cols; ++j) {")
    code.level += 1
    code.line(f"const int64_t {iv[-1]} = col + j;")
    code.line(f"(void){iv[-1]};")
    code.line("const int32_t acc = sums[r * ld + j];")
