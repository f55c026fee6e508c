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
gather, a half type) keep the plain loop.

Whole chunks of 64 columns (four vectors) go a chunk at a time down the block's rows: the
values that depend on the column only (a scale times a constant, a bias) are computed once a
chunk, and an 8-bit result's four vectors narrow to one 64-byte store (aotc::bytes64) where
each vector's vpmovdb took four cycles on Zen 4. A requantization, cast(clamp(round(v) + zp,
lo, hi)), is clamp(v, lo - zp, hi - zp) converted rounding half to even, plus zp: the same
integers (the bounds are integers and rounding is monotone), in three instructions fewer;
a relu before a positive scale and a lower bound lo - zp >= 0 is dropped, as that bound stops
what it would. The other columns go 16 at a time, the last vector masked."""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ....dtypes import DType
from ....ir.expr import Binary, BinaryOp, Cast, Constant, Load, Node, Unary, UnaryOp, children, nodes
from ....ir.symbols import flat_offset
from .. import ops
from ..exprs import c_index

# the build where these intrinsics exist (masked byte loads and stores need BW and VL)
GUARD = "defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)"
_COL = sympy.Symbol("col", integer=True)
_INTEGERS = (DType.int32, DType.uint8, DType.int8)
_BYTE_RANGE = {DType.uint8: (0, 255), DType.int8: (-128, 127)}
_FLOAT_BINARY = {BinaryOp.ADD: "_mm512_add_ps", BinaryOp.SUB: "_mm512_sub_ps",
                 BinaryOp.MUL: "_mm512_mul_ps", BinaryOp.DIV: "_mm512_div_ps"}


class Unsupported(Exception):
    """A node this emitter has no vector form for: the plain loop is emitted instead."""


def requantization(e: Node) -> tuple[Node, float, float, float] | None:
    """(v, lo, hi, zp) where e is cast(clamp(round(v) + zp, lo, hi)) to uint8 or int8, with
    integer bounds lo <= hi inside the type; a relu in v = relu(y) * s (s > 0) is left out
    where lo - zp >= 0, the clamp stopping what it would. None for any other node."""
    if not (isinstance(e, Cast) and e.dtype in _BYTE_RANGE and e.x.dtype is DType.float32):
        return None
    x, bounds = e.x, {}
    while isinstance(x, Binary) and ops.bounded_by_constant(x) and x.op not in bounds:
        bounds[x.op] = x.b.value
        x = x.a
    zp = 0.0
    if isinstance(x, Binary) and x.op is BinaryOp.ADD and isinstance(x.b, Constant):
        zp, x = x.b.value, x.a
    if not (isinstance(x, Unary) and x.op is UnaryOp.ROUND and len(bounds) == 2):
        return None
    lo, hi = bounds[BinaryOp.MAXIMUM], bounds[BinaryOp.MINIMUM]
    t_lo, t_hi = _BYTE_RANGE[e.dtype]
    if (not all(float(b).is_integer() for b in (lo, hi, zp)) or not t_lo <= lo <= hi <= t_hi
            or abs(zp) > 1 << 16):
        return None
    v = x.x
    if (lo - zp >= 0 and isinstance(v, Binary) and v.op is BinaryOp.MUL
            and isinstance(v.b, Constant) and v.b.value > 0 and isinstance(v.a, Binary)
            and v.a.op is BinaryOp.MAXIMUM and ops.bounded_by_constant(v.a)
            and v.a.b.value == 0):
        v = Binary(BinaryOp.MUL, v.a.a, v.b, DType.float32)
    return v, lo, hi, zp


@dataclass(frozen=True)
class Lanes:
    """16 columns of the block: `col` the first's C expression (counted from `col`, the
    block's first), `mask` its lanes inside the block, `suffix` its values' names' ending."""
    col: str = "j"
    mask: str = "m"
    suffix: str = ""


class VectorBody:
    """One statement per node (`const __m512 vN = ...;` or `__m512i`), each node once.
    Integer values (int32, uint8, int8) are held as 16 int32 lanes; buffers are named as
    the epilogue's table unpacks them (their own names). With `hoisted`, the values that
    do not depend on the row go there (computed once for all the rows of a chunk), the
    constants named once for the chunk's four vectors (`constants`, shared by them)."""

    def __init__(self, sizes_of: dict, source: str, iv, lines_out: list[str],
                 lanes: Lanes = Lanes(), hoisted: list[str] | None = None,
                 constants: dict[Node, str] | None = None):
        self.sizes_of, self.source, self.iv, self.lanes = sizes_of, source, iv, lanes
        self.names: dict[Node, str] = {}
        self.lines, self.hoisted, self.constants = lines_out, hoisted, constants

    def value(self, e: Node) -> str:
        if e in self.names:
            return self.names[e]
        if (isinstance(e, Cast) and isinstance(e.x, Cast) and e.dtype is DType.float32
                and e.x.dtype is DType.float64 and e.x.x.dtype is DType.float32):
            return self.value(e.x.x)  # float(double(v)) is v (a scale taken through float64)
        requantized = self._requantize(e)
        if requantized is None:
            for k in children(e):
                self.value(k)
            requantized = self._text(e)
        return self._name(e, requantized)

    def _name(self, e: Node, text: str) -> str:
        vt = "__m512" if e.dtype is DType.float32 else "__m512i"
        if isinstance(e, Constant) and self.constants is not None and self.hoisted is not None:
            if e not in self.constants:
                self.constants[e] = f"k{len(self.constants)}"
                self.hoisted.append(f"const {vt} {self.constants[e]} = {text};")
            self.names[e] = self.constants[e]
            return self.constants[e]
        name = f"v{len(self.names)}{self.lanes.suffix}"
        self.names[e] = name
        lines = self.hoisted if self.hoisted is not None and self._row_free(e) else self.lines
        lines.append(f"const {vt} {name} = {text};")
        return name

    def _row_free(self, e: Node) -> bool:
        """Whether e is the same on every row: no sums, no load that moves with the row."""
        rows = set(self.iv[:-1])
        for k in nodes(e):
            if isinstance(k, Load) and (k.buffer == self.source or any(
                    v in rows for v in flat_offset(k.index, self.sizes_of[k.buffer])
                    .free_symbols)):
                return False
        return True

    def _requantize(self, e: Node) -> str | None:
        """A requantization (see requantization) as clamp(v, lo - zp, hi - zp) converted
        half to even, + zp but on a NaN (INT_MIN, whose low byte 0 the plain loop's cast
        gives); None for any other node."""
        found = requantization(e)
        if found is None:
            return None
        v, lo, hi, zp = found
        w = self.value(v)
        lo_c, hi_c = (ops.literal(b - zp, DType.float32) for b in (lo, hi))
        clamped = Binary(BinaryOp.MINIMUM, Binary(BinaryOp.MAXIMUM, v, Constant(
            lo - zp, DType.float32), DType.float32), Constant(hi - zp, DType.float32),
            DType.float32)
        c = self._name(clamped, f"_mm512_min_ps(_mm512_set1_ps({hi_c}), "
                                f"_mm512_max_ps(_mm512_set1_ps({lo_c}), {w}))")
        text = f"_mm512_cvt_roundps_epi32({c}, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)"
        if not zp:
            return text
        i = self._name(Cast(clamped, DType.int32), text)
        return (f"_mm512_mask_add_epi32({i}, _mm512_cmp_ps_mask({c}, {c}, _CMP_ORD_Q), {i}, "
                f"_mm512_set1_epi32({int(zp)}))")

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
            return f"_mm512_maskz_loadu_epi32({self.lanes.mask}, sums + r * ld + {self.lanes.col})"
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
        p = f"{e.buffer} + ({c_index(base)}) + {self.lanes.col}"
        m = self.lanes.mask
        if e.dtype is DType.float32:
            return f"_mm512_maskz_loadu_ps({m}, {p})"
        if e.dtype is DType.int32:
            return f"_mm512_maskz_loadu_epi32({m}, {p})"
        widen = "_mm512_cvtepu8_epi32" if e.dtype is DType.uint8 else "_mm512_cvtepi8_epi32"
        return f"{widen}(_mm_maskz_loadu_epi8({m}, {p}))"

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


def store_chunk(dtype: DType, out: str, vs: list[str], in_range: bool) -> list[str]:
    """The stores of a chunk's four vectors `vs` at `out`: 8-bit lanes as one vector of
    their 64 low bytes (aotc::bytes64; `in_range` where each lane is 0..255 or INT_MIN)."""
    if dtype in _BYTE_RANGE:
        return [f"_mm512_storeu_si512({out}, aotc::bytes64<{str(in_range).lower()}>"
                f"({', '.join(vs)}));"]
    kind = "ps" if dtype is DType.float32 else "si512"
    return [f"_mm512_storeu_{kind}({out} + {16 * q}, {v});" for q, v in enumerate(vs)]


@dataclass
class VectorForm:
    """The statements of the vector loops: a chunk's hoisted and per-row statements and its
    stores, and the 16-column step of the columns past the last whole chunk."""
    hoisted: list[str]
    chunk_rows: list[str]
    step: list[str]

    def emit(self, code, unravel) -> None:
        """The loops over the block (`unravel(code)` binds a row's leading index variables
        from `r`): whole chunks of 64 columns down the rows, then the rest 16 at a time."""
        code.line("int64_t j0 = 0;")
        with code.block("for (; j0 + 64 <= cols; j0 += 64)"):
            code.lines_of(self.hoisted)
            with code.block("for (int64_t r = 0; r < rows; ++r)"):
                unravel(code)
                code.lines_of(self.chunk_rows)
        with code.block("for (int64_t r = 0; j0 < cols && r < rows; ++r)"):
            unravel(code)
            with code.block("for (int64_t j = j0; j < cols; j += 16)"):
                code.line("const __mmask16 m = cols - j >= 16 ? __mmask16(0xFFFF) "
                          ": __mmask16((1u << (cols - j)) - 1u);")
                code.lines_of(self.step)


def vector_rows(body: Node, out_dtype: DType, sizes, iv, sizes_of: dict, source: str
                ) -> VectorForm | None:
    """The vector form of the epilogue whose value is `body`, written to `out` (row-major,
    its last index variable along the row); None if some node has no vector form here."""
    if out_dtype not in (DType.float32, *_INTEGERS) or body.dtype != out_dtype:
        return None
    off = sympy.expand(flat_offset(iv, sizes))
    if sympy.expand(off.diff(iv[-1])) != 1:
        return None
    row_start = c_index(off.subs(iv[-1], _COL))
    step: list[str] = []
    hoisted: list[str] = []
    rows: list[str] = []
    results = []
    constants: dict[Node, str] = {}
    try:
        one = VectorBody(sizes_of, source, iv, step)
        result = one.value(body)
        for q in range(4):
            chunk = VectorBody(sizes_of, source, iv, rows,
                               Lanes(f"j0 + {16 * q}", "__mmask16(0xFFFF)", f"_{q}"), hoisted,
                               constants)
            results.append(chunk.value(body))
    except Unsupported:
        return None
    step.append(store(out_dtype, f"out + ({row_start}) + j", result))
    # a uint8 requantization's lanes are 0..255, or INT_MIN for a NaN
    in_range = out_dtype is DType.uint8 and requantization(body) is not None
    rows += store_chunk(out_dtype, f"out + ({row_start}) + j0", results, in_range)
    return VectorForm(hoisted, rows, step)
