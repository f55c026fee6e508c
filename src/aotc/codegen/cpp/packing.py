"""The model library's prepacked constants (ABI version 5): the layout check that aotc_create
makes and the packing behind aotc_pack_constant (a swapped weight, as the package stores it).

Which constants are packed, and how, is decided in scheduler/prepack.py; the layouts
themselves are the kernels' (kernels/aotc_kernels.h: the GEMM's panels, the int8 GEMM's
dot-product groups, the weight-only GEMM's int4 values two a byte, a 3x3 convolution's
Winograd transform)."""
from __future__ import annotations

from ...ir.nodes import PackedConvWinograd, PackedGemmB, PackedInt4, PackedInt8B, Program
from .code import CodeBuffer


def emit_packing(code: CodeBuffer, program: Program) -> None:
    """`check_packing()` and `pack_constant()` inside the anonymous namespace: whether the
    kernel linked into this library uses the panel layout the package's weights were packed
    in, and the packing itself."""
    layouts = {(c.packing.nr, c.packing.kc) for c in program.constants
               if isinstance(c.packing, PackedGemmB | PackedConvWinograd)}  # int8's: every build's
    # (a bfloat16 layout has the same panel width and slice depth, rounded to pairs)
    assert len(layouts) <= 1, "one build packs every weight for one micro-kernel"
    code.line("// The packed-weight layout this package was written in (aotc_sgemm_pack_b).")
    code.line("int check_packing() {")
    if layouts:
        nr, kc = layouts.pop()
        code.lines_of([
            "  int64_t nr = 0, kc = 0;",
            "  aotc_sgemm_packed_layout(&nr, &kc);",
            f"  if (nr != {nr} || kc != {kc})",
            "    return aotc::fail(AOTC_ERR_PACKAGE, \"aotc_create: the weights were packed for "
            f"GEMM panels of {nr} x {kc} and this library's kernel uses %lld x %lld; rebuild the "
            "package for this ISA\", (long long)nr, (long long)kc);",
        ])
    code.line("  return AOTC_OK;")
    code.line("}")
    code.line()
    _emit_pack_constant(code, program)


def int8_pack_call(k, n, taps, row_taps, b: str, sb_k, sb_n, dst: str) -> str:
    """The call that packs B [k, n] (at `b`, strides sb_k, sb_n) for the int8 GEMM at `dst`:
    kernel rows of row_taps padded to whole groups (aotc_qconv_pack_b_rows), tap-major over
    taps > 1 (aotc_qconv_pack_b), or as it is (aotc_qgemm_pack_b)."""
    if row_taps:
        return f"aotc_qconv_pack_b_rows({k}, {n}, {row_taps}, {b}, {sb_k}, {sb_n}, {dst});"
    if taps > 1:
        return f"aotc_qconv_pack_b({k}, {n}, {taps}, {b}, {sb_k}, {sb_n}, {dst});"
    return f"aotc_qgemm_pack_b({k}, {n}, {b}, {sb_k}, {sb_n}, {dst});"


def _emit_pack_constant(code: CodeBuffer, program: Program) -> None:
    """`pack_constant(k, src, dst)` inside the anonymous namespace: the user's contiguous
    tensor of constant k packed as the package stores it; false for a constant stored as
    given, which aotc_pack_constant copies."""
    code.line("// The constants weights.bin stores prepacked (aotc_pack_constant).")
    code.lines_of(["bool pack_constant(int64_t k, const void *src, void *dst) {", "  switch (k) {"])
    for k, c in enumerate(program.constants):
        p = c.packing
        if p is None:
            continue
        if isinstance(p, PackedInt4):  # refused (AOTC_ERR_INPUT) with values outside -8..7
            code.lines_of([
                f"    case {k}:",
                f"      aotc::g_outside_int4 = aotc_wo_pack_int4({p.n}, {p.k}, "
                "static_cast<const int8_t *>(src), dst);",
                "      return aotc::g_outside_int4 == 0;"])
            continue
        if isinstance(p, PackedConvWinograd):  # false (no memory for its scratch) as _widened
            code.lines_of([
                f"    case {k}:",
                f"      if (aotc_sconv_pack_winograd({p.cout}, {p.cin}, "
                "static_cast<const float *>(src), static_cast<float *>(dst)))",
                "        return !(aotc::g_no_memory = true);",
                "      return true;"])
            continue
        if isinstance(p, PackedInt8B):
            call = int8_pack_call(p.k, p.n, p.taps, p.row_taps,
                                  f"static_cast<const int8_t *>(src) + {p.offset}", p.sb_k,
                                  p.sb_n, "dst")
        else:
            pack, out = (("aotc_sgemm_pack_b_bf16", "uint16_t") if p.dtype == "bfloat16"
                         else ("aotc_sgemm_pack_b", "float"))
            source = program.buffers[c.buffer]
            if source.dtype.is_floating and source.dtype.compute is not source.dtype:
                # a half model's weight: its values widened to float32, then packed
                code.lines_of([f"    case {k}: {{", *_widened(source.dtype, _numel(source)),
                               f"      {pack}({p.k}, {p.n}, wide + {p.offset}, {p.sb_k}, "
                               f"{p.sb_n}, static_cast<{out} *>(dst));",
                               "      std::free(wide);", "      return true;", "    }"])
                continue
            call = (f"{pack}({p.k}, {p.n}, static_cast<const float *>(src) + {p.offset}, "
                    f"{p.sb_k}, {p.sb_n}, static_cast<{out} *>(dst));")
        code.lines_of([f"    case {k}:", f"      {call}", "      return true;"])
    code.lines_of(["    default:", "      return false;", "  }", "}", ""])


def _numel(buf) -> int:
    n = 1
    for size in buf.sizes:
        n *= int(size)
    return n


def _widened(dtype, numel: int) -> list[str]:
    """C++ lines: `wide`, the half values at `src` widened into malloc'ed floats (no memory:
    pack_constant says so through aotc::g_no_memory)."""
    load = ("aotc::bf16_bits_to_float(h[i])" if dtype.name == "bfloat16" else "float(h[i])")
    ctype = "uint16_t" if dtype.name == "bfloat16" else "_Float16"
    return [f"      const {ctype} *h = static_cast<const {ctype} *>(src);",
            f"      float *wide = static_cast<float *>(std::malloc(sizeof(float) * {numel}));",
            "      if (!wide) return !(aotc::g_no_memory = true);",
            f"      for (int64_t i = 0; i < {numel}; ++i) wide[i] = {load};"]
