"""An integer product's epilogue as AVX-512 intrinsics: 16 columns of a row-major block at
a time, for the bodies a quantized layer's epilogue is made of (the sums to float32, per
column scales and biases, a residual read along the row, +, -, *, /, relu and clamps,
erf (an erf-GELU), round half to even, the cast to uint8 or int8).

g++ 12 vectorises the plain loop (templates/qgemm.py) too, but a relu or a clamp
`a < c ? c : a` becomes a compare and a masked blend rather than one vmaxps, and the cast to
bytes a chain of permutes: a ResNet convolution's requantizing epilogue (bias, relu,
quantize) took 14 cycles for 16 values on Zen 4 (19 with a residual), these intrinsics 8.
Every lane computes what the scalar body computes (the same operations in the same order,
vmaxps(c, a) being exactly `a < c ? c : a`, NaN included), except that g++ may contract
the plain loop's a * b + c into one rounding. Bodies with anything else (a tanh-GELU, a
gather, a half type) keep the plain loop."""
from __future__ import annotations

import sympy

from ....dtypes import DType
from ....ir.expr import Binary, BinaryOp, Cast, Constant, Load, Node, Unary, UnaryOp, children
from ....ir.symbols import flat_offset
from .. import ops
from ..exprs import c_index

# the build where these intrinsics exist (masked byte loads and stores need BW and VL)
GUARD = "defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)"
_COL = sympy.Symbol("col", integer=True)
_INTEGERS = (DType.int32, DType.uint8, DType.int8)
_FLOAT_BINARY = {BinaryOp.ADD: "_mm512_add_ps", BinaryOp.SUB: "_mm512_sub_ps",
                 BinaryOp.MUL: "_mm512_mul_ps", BinaryOp.DIV: "_mm512_div_ps"}


class Unsupported(Exception):
    """A node this emitter has no vector form for: the plain loop is emitted instead."""


class VectorBody:
    """One statement per node (`const __m512 vN = ...;` or `__m512i`), each node once.
    Integer values (int32, uint8, int8) are held as 16 int32 lanes; buffers are named as
    the epilogue's table unpacks them (their own names)."""

    def __init__(self, sizes_of: dict, source: str, iv, lines_out: list[str]):
        self.sizes_of, self.source, self.iv = sizes_of, source, iv
        self.names: dict[Node, str] = {}
        self.lines = lines_out

    def value(self, e: Node) -> str:
        if e in self.names:
            return self.names[e]
        if (isinstance(e, Cast) and isinstance(e.x, Cast) and e.dtype is DType.float32
                and e.x.dtype is DType.float64 and e.x.x.dtype is DType.float32):
            return self.value(e.x.x)  # float(double(v)) is v (a scale taken through float64)
        for k in children(e):
            self.value(k)
        text = self._text(e)
        name = f"v{len(self.names)}"
        self.names[e] = name
        vt = "__m512" if e.dtype is DType.float32 else "__m512i"
        self.lines.append(f"const {vt} {name} = {text};")
        return name

    def _text(self, e: Node) -> str:
        if e.dtype not in (DType.float32, *_INTEGERS):
            raise Unsupported(e.dtype)
        if isinstance(e, Constant):
            return (f"_mm512_set1_ps({ops.literal(e.value, DType.float32)})"
                    if e.dtype is DType.float32 else f"_mm512_set1_epi32({int(e.value)})")
        if isinstance(e, Load):
            return self._load(e)
        if isinstance(e, Cast):
            return self._cast(e)
        if isinstance(e, Binary) and e.dtype is DType.float32:
            a, b = self.value(e.a), self.value(e.b)
            if e.op in _FLOAT_BINARY:
                return f"{_FLOAT_BINARY[e.op]}({a}, {b})"
            if ops.bounded_by_constant(e):  # a < c ? c : a (maximum), a > c ? c : a
                return f"_mm512_{'max' if e.op is BinaryOp.MAXIMUM else 'min'}_ps({b}, {a})"
        if isinstance(e, Unary) and e.dtype is DType.float32:
            x = self.value(e.x)
            if e.op is UnaryOp.ROUND:  # nearbyint: half to even
                return f"_mm512_roundscale_ps({x}, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)"
            if e.op is UnaryOp.ERF:  # aotc::erf step for step (kernels/aotc_codegen.h)
                return f"aotc::erf16({x})"
            if e.op is UnaryOp.NEG:  # the sign bit flipped, as -x (0 - x would give +0)
                return (f"_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512({x}), "
                        "_mm512_set1_epi32(int(0x80000000u))))")
        raise Unsupported(e)

    def _load(self, e: Load) -> str:
        if e.buffer == self.source:
            return "_mm512_maskz_loadu_epi32(m, sums + r * ld + j)"
        off = sympy.expand(flat_offset(e.index, self.sizes_of[e.buffer]))
        inner = self.iv[-1]
        step = sympy.expand(off.diff(inner))
        base = sympy.expand(off.subs(inner, _COL))
        if step not in (0, 1) or base.has(inner) or any(
                isinstance(a, (sympy.Min, sympy.Max, sympy.floor, sympy.Mod))
                for a in sympy.preorder_traversal(off)):
            raise Unsupported(e)
        if step == 0:  # the same value along the row: a per-row scale, a number in memory
            one = f"{e.buffer}[{c_index(base)}]"
            return (f"_mm512_set1_ps({one})" if e.dtype is DType.float32
                    else f"_mm512_set1_epi32(int32_t({one}))")
        p = f"{e.buffer} + ({c_index(base)}) + j"
        if e.dtype is DType.float32:
            return f"_mm512_maskz_loadu_ps(m, {p})"
        if e.dtype is DType.int32:
            return f"_mm512_maskz_loadu_epi32(m, {p})"
        widen = "_mm512_cvtepu8_epi32" if e.dtype is DType.uint8 else "_mm512_cvtepi8_epi32"
        return f"{widen}(_mm_maskz_loadu_epi8(m, {p}))"

    def _cast(self, e: Cast) -> str:
        src, dst = e.x.dtype, e.dtype
        if src == dst:
            return self.value(e.x)
        if dst is DType.float32 and src in _INTEGERS:
            # float(int8(v)) (a requantized residual read back): the lanes hold v truncated,
            # unwrapped, and convert to +0.0 for v in (-1, 0), as exprs.c_cast's
            # trunc(v) + 0 gives it
            return f"_mm512_cvtepi32_ps({self.value(e.x)})"
        if dst in (DType.uint8, DType.int8) and src is DType.float32:
            if isinstance(e.x, Cast):  # a narrowing of a value cast before: the plain loop's
                raise Unsupported(e)
            # truncation toward zero, as static_cast; the store keeps each lane's low byte
            return f"_mm512_cvttps_epi32({self.value(e.x)})"
        raise Unsupported(e)


def store(dtype: DType, out: str, v: str) -> str:
    """The masked store of the 16 lanes of `v` (a value of `dtype`) at `out`."""
    if dtype is DType.float32:
        return f"_mm512_mask_storeu_ps({out}, m, {v});"
    if dtype is DType.int32:
        return f"_mm512_mask_storeu_epi32({out}, m, {v});"
    return f"_mm_mask_storeu_epi8({out}, m, _mm512_cvtepi32_epi8({v}));"


def vector_rows(body: Node, out_dtype: DType, sizes, iv, sizes_of: dict, source: str
                ) -> list[str] | None:
    """The statements of one step of 16 columns (`m` the lanes in the block, `j` the first
    column, the row's leading index variables bound), ending in the store to `out`; None if
    some node has no vector form here."""
    if out_dtype not in (DType.float32, *_INTEGERS) or body.dtype != out_dtype:
        return None
    lines: list[str] = []
    try:
        result = VectorBody(sizes_of, source, iv, lines).value(body)
    except Unsupported:
        return None
    off = sympy.expand(flat_offset(iv, sizes))
    if sympy.expand(off.diff(iv[-1])) != 1:
        return None
    lines.append(store(out_dtype, f"out + ({c_index(off.subs(iv[-1], _COL))}) + j", result))
    return lines
