"""Buffers of the loop-level IR and the program that holds them.

A buffer is computed by one op: Pointwise (a body per output index), Reduction (a body
combined over reduced axes) or a Template (a hand-written kernel: GEMM, convolution,
attention, scans, sorting).
Views never become buffers: lowering folds them into the index of each Load.
"""
from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar

import sympy

from ..dtypes import DType
from ..errors import located
from .expr import IndirectLoad, Load, Node, loads, transform


class ReduceType(enum.Enum):
    SUM = "sum"
    PROD = "prod"
    MAX = "max"  # NaN-propagating, like torch.amax
    MIN = "min"
    ANY = "any"
    ALL = "all"
    ARGMAX = "argmax"  # int64 position (row-major over the reduced axes) of the first max
    ARGMIN = "argmin"


ARG_REDUCTIONS = frozenset({ReduceType.ARGMAX, ReduceType.ARGMIN})


@dataclass(frozen=True)
class Pointwise:
    """Output element (i0, ..., i{n-1}) holds `body`."""

    body: Node


@dataclass(frozen=True)
class Reduction:
    """Output element (i...) holds reduce_type over r in `ranges` of `body` (uses i* and r*).
    Arg reductions compare `body` values but store an int64 position."""

    reduce_type: ReduceType
    ranges: tuple[sympy.Expr, ...]
    body: Node


@dataclass(frozen=True)
class Operand:
    """A strided window of a materialized buffer, as a template reads it."""

    buffer: str
    offset: sympy.Expr
    strides: tuple[sympy.Expr, ...]


class Template:
    """An op computed by a hand-written kernel rather than a generated loop nest.

    The protocol every pass relies on, so that a new template joins without edits to
    fusion, the memory plan or the run function:
      - it writes its own buffer, whole and contiguous (nothing else);
      - `reads()`: the buffers it reads, in place (fusion keeps them materialized, the
        memory plan keeps them alive until it has run);
      - `workspace()`: bytes of scratch it needs while it runs (the memory plan gives it an
        arena slot that is free again as soon as the kernel returns);
      - `describe()`: its one-line text form for IR dumps;
      - `flops()`: the arithmetic one run does (two per multiply-add), for the profile's
        GFLOP/s; 0 (the default) for a kernel that moves or orders data;
      - `with_epilogue(source, body)`: the template with a pointwise consumer of its result
        applied to each value as the kernel finishes it (fusion offers every such
        consumer; a template that cannot apply one returns None);
      - its emitter, the C++ call into the shipped kernel or its generated kernel, is
        registered by template class in codegen/cpp/templates/ (how, kept apart from what).
    """

    def reads(self) -> tuple[str, ...]:
        raise NotImplementedError

    def workspace(self) -> sympy.Expr:
        return sympy.Integer(0)

    def describe(self) -> str:
        raise NotImplementedError

    def flops(self) -> sympy.Expr:
        return sympy.Integer(0)

    def with_epilogue(self, source: str, body: Node) -> Template | None:
        """This template followed by `body`, a pointwise body over its output's index that
        reads its result as Load(source, identity index); None when the kernel has no room.
        The fused buffer holds the body's values in the body's dtype, which the template
        checks it can write."""
        return None


def format_operand(o: Operand) -> str:
    return f"{o.buffer}+{o.offset} strides=({', '.join(str(s) for s in o.strides)})"


class TakesEpilogue:
    """The epilogue half of a template whose kernel hands each finished block of its result
    to a generated function (Gemm, IntMatmul): its fields `epilogue`, a pointwise body over
    the output's index (i0, ..., i{n-1}) that reads the template's own result as
    Load(epilogue_source, identity), and `epilogue_source`. The buffer then holds the
    body's values, in the body's dtype; the result itself is never stored."""

    epilogue: Node | None
    epilogue_source: str

    def epilogue_reads(self) -> list[str]:
        """The buffers the epilogue body reads besides the result, in order."""
        if self.epilogue is None:
            return []
        return list(dict.fromkeys(ld.buffer for ld in loads(self.epilogue)
                                  if ld.buffer != self.epilogue_source))

    def then(self, source: str, body: Node):
        """This template with `body` applied after any epilogue already fused (which the
        body reads as Load(source, ...))."""
        template: Any = self  # a frozen dataclass that mixes this in
        if self.epilogue is None:
            return dataclasses.replace(template, epilogue=body, epilogue_source=source)
        earlier = self.epilogue

        def leaf(x: Node) -> Node:  # the result it reads is the earlier epilogue's
            return earlier if isinstance(x, Load) and x.buffer == source else x
        return dataclasses.replace(template, epilogue=transform(body, leaf))

    def describe_epilogue(self) -> str:
        if self.epilogue is None:
            return ""
        from .printer import format_expr  # the printer imports this module

        return f", then {format_expr(self.epilogue)} of {self.epilogue_source}"


@dataclass(frozen=True)
class Gemm(TakesEpilogue, Template):
    """out[b, m, n] = alpha * sum_k a[b, m, k] * b[b, k, n] + beta * bias[b, m, n].

    Operands carry (batch, rows, cols) strides; the output is contiguous (batch, M, N)
    (a 2-D output simply has batch 1). With `b_packed`, b names a constant stored in the
    kernel's panel layout (its ConstantSpec.packing says how), shared by the whole batch;
    with `b_bf16` too, that layout holds bfloat16 (the precision="bf16" kernel).
    An `epilogue` is a pointwise body over the output's index (i0, ..., i{n-1} of the
    buffer's sizes), reading the product (with its bias) as Load(epilogue_source, identity):
    each output element holds its value instead, computed as the kernel finishes a tile.
    """

    a: Operand
    b: Operand
    bias: Operand | None
    batch: sympy.Expr
    m: sympy.Expr
    n: sympy.Expr
    k: sympy.Expr
    alpha: float = 1.0
    beta: float = 1.0
    b_packed: bool = False
    b_bf16: bool = False
    b_half: bool = False  # b names a float16/bfloat16 constant packed as float32 panels
    epilogue: Node | None = None
    epilogue_source: str = ""

    def reads(self) -> tuple[str, ...]:
        names = [o.buffer for o in (self.a, self.b, self.bias) if o is not None]
        return tuple(dict.fromkeys(names + self.epilogue_reads()))

    def flops(self) -> sympy.Expr:
        return 2 * self.batch * self.m * self.n * self.k

    def with_epilogue(self, source: str, body: Node) -> Gemm | None:
        """A float32 body without data-dependent loads, after any epilogue already fused,
        of a float32 result (the kernel's)."""
        if body.dtype is not DType.float32 or any(
                isinstance(ld, IndirectLoad) or (ld.buffer == source
                                                 and ld.dtype is not DType.float32)
                for ld in loads(body)):
            return None
        return self.then(source, body)

    def describe(self) -> str:
        bias = f" + {self.beta}*{format_operand(self.bias)}" if self.bias else ""
        b = f"packed {self.b.buffer}" if self.b_packed else format_operand(self.b)
        if self.b_bf16:
            b = f"bf16 {b}"
        elif self.b_half:
            b = f"widened {b}"
        return (f"gemm[{self.batch}x{self.m}x{self.n}x{self.k}] "
                f"{self.alpha}*{format_operand(self.a)} @ {b}{bias}{self.describe_epilogue()}")


SMALL_PLANE = 256  # kSmallPlane of kernels/conv.cpp: smaller output planes batch all images


@dataclass(frozen=True)
class Conv(Template):
    """Convolution over 1-3 spatial dims of contiguous NC[D][H]W buffers (float32):
    out[n, g*Cog + co, o] = bias[g*Cog + co] + sum over ci, k of
        weight[g*Cog + co, ci, k] * x[n, g*Cig + ci, o*stride - padding + k*dilation],
    zero outside x; transposed, each x element scatters into out through weight
    [in_channels, Cog, k...] instead (output_padding is already in out_size).
    Cig = in_channels / groups, Cog = out_channels / groups.
    """

    x: str
    weight: str
    bias: str | None
    batch: sympy.Expr
    in_channels: sympy.Expr
    out_channels: sympy.Expr
    groups: int
    in_size: tuple[sympy.Expr, ...]
    out_size: tuple[sympy.Expr, ...]
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    transposed: bool = False
    # an activation applied to the result: clamped to [clamp_min, clamp_max] (None: no
    # bound on that side; ReLU is clamp_min 0, ReLU6 clamp_min 0 and clamp_max 6)
    clamp_min: float | None = None
    clamp_max: float | None = None
    # a buffer of the output's shape added to the result before the clamp (a residual)
    residual: str | None = None
    # hardswish applied to the result, after the residual and never with a clamp
    # (kernels/conv_activation.h: r * min(max(r + 3, 0), 6) * (1/6))
    hardswish: bool = False
    # the weight is a constant stored as the GEMM's prepacked B [Cig*taps, out_channels]
    # (scheduler/prepack.py): the kernel computes out^T = columns^T weight^T per image
    weight_packed: bool = False
    # the weight (3x3, stride 1, dilation 1, one group, 2-D) is a constant stored as its
    # Winograd F(2x2, 3x3) transform (PackedConvWinograd): the kernel's Winograd path
    weight_winograd: bool = False
    # x, or the output (and the residual), stored channels last [n, h, w, c]
    # (scheduler/layout.py; aotc_conv_shape.layout for which convolutions may)
    x_channels_last: bool = False
    out_channels_last: bool = False

    def __post_init__(self) -> None:
        n = len(self.kernel)
        if not 1 <= n <= 3 or any(len(t) != n for t in (
                self.in_size, self.out_size, self.stride, self.padding, self.dilation)):
            raise ValueError(f"conv: 1 to 3 spatial dims, each parameter one per dim ({self})")

    def reads(self) -> tuple[str, ...]:
        return (self.x, self.weight) + ((self.bias,) if self.bias else ()) + (
            (self.residual,) if self.residual else ())

    def flops(self) -> sympy.Expr:
        """Per output element (per input element, transposed): a multiply-add per weight tap
        of its group's channels."""
        taps = _product(self.kernel)
        if self.transposed:
            return 2 * self.batch * self.in_channels * _product(self.in_size) * taps \
                * self.out_channels / self.groups
        return 2 * self.batch * self.out_channels * _product(self.out_size) * taps \
            * self.in_channels / self.groups

    def workspace(self) -> sympy.Expr:
        """The scratch of the kernel's path (aotc_sconv_workspace in kernels/aotc_kernels.h)."""
        taps = _product(self.kernel)
        cig = sympy.sympify(self.in_channels) / self.groups
        cog = sympy.sympify(self.out_channels) / self.groups
        if self.transposed:
            return sympy.expand(4 * cog * taps * _product(self.in_size))
        pointwise = all(k == 1 for k in self.kernel) and all(s == 1 for s in self.stride) \
            and all(p == 0 for p in self.padding)
        plane = _product(self.out_size)
        if self.weight_winograd:  # one image's transformed tiles and products: 16 floats
            # per channel in and out per 2x2 tile, ceil(ho/2) * ceil(wo/2) <= (ho+1)(wo+1)/4
            ho, wo = self.out_size
            return sympy.expand(16 * (self.in_channels + self.out_channels) * (ho + 1) * (wo + 1))
        if self.weight_packed:  # each image's columns (none for 1x1), then its out^T (none
            # where the output is channels last: out^T is the output itself)
            columns = 0 if pointwise else cig * taps * plane
            out_t = 0 if self.out_channels_last else plane * self.out_channels
            return sympy.expand(4 * self.batch * (columns + out_t))
        if cig == 1 or pointwise:
            return sympy.Integer(0)
        one_image = sympy.expand(4 * cig * taps * plane)
        all_images = sympy.expand(4 * (cig * taps + cog) * self.batch * plane)
        # the kernel's choice, decided at run time when the sizes are symbolic
        return sympy.Piecewise((all_images, sympy.And(plane < SMALL_PLANE, self.batch > 1)),
                               (one_image, True))

    def describe(self) -> str:
        kind = "conv_transpose" if self.transposed else "conv"
        bias = f" + {self.bias}" if self.bias else ""
        sizes = ", ".join(map(str, self.in_size))
        return (f"{kind}{len(self.kernel)}d {self.x}[{self.batch}, {self.in_channels}, {sizes}] "
                f"* {self.weight}{bias} groups={self.groups} kernel={self.kernel} "
                f"stride={self.stride} padding={self.padding} dilation={self.dilation}"
                + (f" + {self.residual}" if self.residual else "") + self._clamp_text()
                + (" weight=packed" if self.weight_packed else "")
                + (" weight=winograd" if self.weight_winograd else "")
                + (" x=channels_last" if self.x_channels_last else "")
                + (" out=channels_last" if self.out_channels_last else ""))

    def _clamp_text(self) -> str:
        if self.hardswish:
            return " hardswish"
        if self.clamp_min is None and self.clamp_max is None:
            return ""
        return f" clamp=[{self.clamp_min}, {self.clamp_max}]"


class ScanOp(enum.Enum):
    SUM = "sum"  # cumsum
    PROD = "prod"  # cumprod
    LOGSUMEXP = "logsumexp"  # logcumsumexp
    MAX = "max"  # cummax: NaN-propagating
    MIN = "min"  # cummin


@dataclass(frozen=True)
class Scan(Template):
    """Inclusive scan of contiguous buffer `x` (same numel as the output) viewed as
    [outer, length, inner]: out[o, j, i] = x[o, 0, i] op ... op x[o, j, i]. With
    `positions` (MAX and MIN only), out holds instead the int64 position along the scanned
    dim of the running max or min (the last of equal values), as cummax's indices."""

    x: str
    op: ScanOp
    outer: sympy.Expr
    length: sympy.Expr
    inner: sympy.Expr
    positions: bool = False

    def __post_init__(self) -> None:
        if self.positions and self.op not in (ScanOp.MAX, ScanOp.MIN):
            raise ValueError(f"scan: {self.op.value} has no positions")

    def reads(self) -> tuple[str, ...]:
        return (self.x,)

    def describe(self) -> str:
        what = f"positions of {self.op.value}" if self.positions else self.op.value
        return (f"scan {what} of {self.x} over [{self.outer}, {self.length}, {self.inner}] "
                "along the middle")


class SortAlgorithm(enum.Enum):
    """How a line is ordered, which decides where equal values go (as in PyTorch's kernels)."""

    STABLE = 0  # equal values keep their order
    UNSTABLE = 1  # introsort: equal values in the order that algorithm leaves them
    TOPK = 2  # the first `count`, sorted
    TOPK_UNSORTED = 3
    SELECT = 4  # the one element at `first`
    MEDIAN = 5  # the lower median, ties to the smaller position; a line with NaN: its first NaN
    NANMEDIAN = 6  # the lower median of the numbers of the line
    MODE = 7  # the most frequent value (the smallest of equally frequent ones)


@dataclass(frozen=True)
class ArgSort(Template):
    """Positions that sort each line of contiguous buffer `x` viewed as [outer, length,
    inner] along the middle: out[o, j, i] (int64) is the position of the (first + j)-th
    element in sorted order, j < count. NaN ranks above every number. sort, argsort, topk
    and kthvalue are slices of it."""

    x: str
    dtype: DType  # of x
    outer: sympy.Expr
    length: sympy.Expr
    inner: sympy.Expr
    first: sympy.Expr
    count: sympy.Expr
    descending: bool = False
    algorithm: SortAlgorithm = SortAlgorithm.STABLE

    def reads(self) -> tuple[str, ...]:
        return (self.x,)

    def describe(self) -> str:
        order = "descending" if self.descending else "ascending"
        return (f"argsort ({self.algorithm.name.lower()}, {order}) of {self.x} over "
                f"[{self.outer}, {self.length}, {self.inner}] along the middle, positions "
                f"[{self.first}, {self.first} + {self.count})")


@dataclass(frozen=True)
class SearchSorted(Template):
    """out[o, j] (int64): where values[o, j] goes in the sorted line sorted[o or 0, :n]
    (the first such place, or the last with `right`), lines of contiguous buffers."""

    sorted: str
    values: str
    dtype: DType  # of sorted and values
    lines: sympy.Expr  # lines of `sorted`: 1 (shared by every row of values) or `rows`
    n: sympy.Expr
    rows: sympy.Expr
    per_row: sympy.Expr
    right: bool = False

    def reads(self) -> tuple[str, ...]:
        return (self.sorted, self.values)

    def describe(self) -> str:
        side = "right" if self.right else "left"
        return (f"searchsorted ({side}) of {self.values} [{self.rows}, {self.per_row}] in "
                f"{self.sorted} [{self.lines}, {self.n}]")


class MaskKind(enum.Enum):
    NONE = 0
    ADD = 1  # a float mask added to the scores
    BOOL = 2  # a bool mask: scores where (mask != 0) == fill_when become `fill`


@dataclass(frozen=True)
class Attention(Template):
    """Scaled dot-product attention over operands viewed as (batch, head, position, dim):
    out[b, h, i, :] = sum_j softmax_j(s[i, :]) v[b, h // group, j, :], with
    s[i, j] = scale * q[b, h, i, :] . k[b, h // group, j, :], then the mask, and key j > i
    hidden when `causal`. The output is contiguous [batch, heads, q_len, v_dim] (float32).
    A row that sees no key holds 0 (SDPA) or NaN with `empty_rows_nan` (a softmax of -inf).
    `probs` float16 / bfloat16: the arithmetic of PyTorch's CPU flash-attention kernel for
    inputs of that type (given here widened to float32): keys in blocks of 512, its fast
    exp, and the probabilities rounded to that type before they weight the values.
    """

    q: Operand
    k: Operand
    v: Operand
    mask: Operand | None
    batch: sympy.Expr
    heads: sympy.Expr
    group: sympy.Expr  # query heads per key/value head (grouped-query attention)
    q_len: sympy.Expr
    kv_len: sympy.Expr
    head_dim: sympy.Expr
    v_dim: sympy.Expr
    scale: float
    causal: bool = False
    mask_kind: MaskKind = MaskKind.NONE
    fill_when: bool = False
    fill: float = float("-inf")
    empty_rows_nan: bool = False
    probs: DType = DType.float32

    def __post_init__(self) -> None:
        if self.probs not in (DType.float32, DType.float16, DType.bfloat16):
            raise ValueError(f"attention: probabilities in {self.probs.name}")
        for o in (self.q, self.k, self.v) + ((self.mask,) if self.mask else ()):
            if len(o.strides) != 4:
                raise ValueError(f"attention: operand {o.buffer} needs 4 strides, has "
                                 f"{len(o.strides)}")
        if (self.mask is None) != (self.mask_kind is MaskKind.NONE):
            raise ValueError("attention: a mask needs its kind, and a kind its mask")

    def reads(self) -> tuple[str, ...]:
        return tuple(o.buffer for o in (self.q, self.k, self.v, self.mask) if o is not None)

    def flops(self) -> sympy.Expr:
        """The scores and the weighted values, every key counted (causal or not)."""
        return 2 * self.batch * self.heads * self.q_len * self.kv_len * (self.head_dim
                                                                          + self.v_dim)

    def describe(self) -> str:
        extras = [f"scale={self.scale:g}"]
        if self.causal:
            extras.append("causal")
        if self.mask is not None:
            how = "+" if self.mask_kind is MaskKind.ADD else \
                f"fill {self.fill:g} where {int(self.fill_when)}"
            extras.append(f"mask {how} {format_operand(self.mask)}")
        if self.group != 1:
            extras.append(f"group={self.group}")
        if self.probs is not DType.float32:
            extras.append(f"flash probs={self.probs.name}")
        return (f"attention[{self.batch}x{self.heads}x{self.q_len}x{self.kv_len}, "
                f"d={self.head_dim}, dv={self.v_dim}] q={format_operand(self.q)} "
                f"k={format_operand(self.k)} v={format_operand(self.v)} {' '.join(extras)}")


def _product(xs) -> sympy.Expr:
    out = sympy.Integer(1)
    for x in xs:
        out = out * x
    return out


Op = Pointwise | Reduction | Template


@dataclass(frozen=True)
class Origin:
    """Where a buffer came from: the ATen nodes and the user's source line."""

    nodes: tuple[str, ...]
    targets: tuple[str, ...]
    source: str = ""


class BufferKind(enum.Enum):
    INPUT = "input"
    CONSTANT = "constant"
    COMPUTED = "computed"


@dataclass
class Buffer:
    name: str
    dtype: DType
    sizes: tuple[sympy.Expr, ...]
    kind: BufferKind
    op: Op | None = None
    origin: Origin | None = None

    def __post_init__(self) -> None:
        if (self.op is None) != (self.kind is not BufferKind.COMPUTED):
            raise ValueError(f"buffer {self.name}: only computed buffers have an op")

    def compiling(self, stage: str):
        """A context for one step on this buffer (errors.located): a failure names the ops
        it came from and the user's source line."""
        o = self.origin
        ops = ", ".join(dict.fromkeys(o.targets)) if o is not None and o.targets else ""
        return located(ops or f"buffer {self.name}", o.source if o is not None else "", stage)


@dataclass
class InputSpec:
    name: str  # the user's argument name
    buffer: str


@dataclass(frozen=True)
class PackedGemmB:
    """A constant stored as the B [k, n] of GEMMs in the kernel's panel layout (kernels/
    aotc_kernels.h): element (k, n) of B is the constant's flat element offset + k*sb_k +
    n*sb_n; nr and kc are the panel width and slice depth of the build's micro-kernel."""

    LAYOUT: ClassVar[str] = "gemm_b_panels"  # metadata.json's name for it

    k: int
    n: int
    offset: int
    sb_k: int
    sb_n: int
    nr: int
    kc: int
    # "float32", or "bfloat16": the layout of aotc_sgemm_pack_b_bf16 (rows in pairs)
    dtype: str = "float32"

    def floats(self) -> int:
        """aotc_sgemm_packed_floats: k rows of n padded to whole panels."""
        return self.k * -(-self.n // self.nr) * self.nr

    def nbytes(self) -> int:
        """Bytes of the packed layout (bfloat16: whole pairs of rows, 2 bytes a value)."""
        if self.dtype == "bfloat16":
            return (self.k + self.k % 2) * -(-self.n // self.nr) * self.nr * 2
        return self.floats() * 4


def int8_packed_rows(k: int, taps: int = 1, row_taps: int = 0) -> int:
    """The rows of B [k, n] the int8 dot-product layout packs (PackedInt8B): k; with
    taps > 1, taps times the channels (k / taps) padded to a multiple of 4; with row_taps,
    k with each kernel row of row_taps padded to a multiple of 4."""
    if row_taps:
        return k // row_taps * -(-row_taps // 4) * 4
    if taps == 1:
        return k
    return taps * -(-(k // taps) // 4) * 4


@dataclass(frozen=True)
class PackedInt8B:
    """An int8 constant stored as the B [k, n] of integer products in the dot-product layout
    of kernels/gemm_int8.cpp (aotc_qgemm_pack_b): element (k, n) is the constant's flat
    element offset + k*sb_k + n*sb_n; the layout is the same on every build."""

    LAYOUT: ClassVar[str] = "int8_dot_groups16"

    k: int
    n: int
    offset: int
    sb_k: int
    sb_n: int
    # > 1: a convolution's weight [n, c, kh, kw] (k = c * taps) taken tap-major, its
    # channels padded to a multiple of 4 (aotc_qconv_pack_b): row (tap, ci) of the packing
    # is the constant's row ci * taps + tap, zero for ci >= c
    taps: int = 1
    # > 0: a channels-first convolution's weight [n, c, kh, kw] (k = c * kh * row_taps)
    # with each kernel row of row_taps taps padded to a multiple of 4
    # (aotc_qconv_pack_b_rows): row (q, kx) of the packing is the constant's row
    # q * row_taps + kx, zero for kx >= row_taps
    row_taps: int = 0

    def rows(self) -> int:
        return int8_packed_rows(self.k, self.taps, self.row_taps)

    def source_rows(self) -> list[int | None]:
        """The constant's row of [k, n] that each packed row holds (None: a zero row)."""
        if self.row_taps:
            kw, kwp = self.row_taps, -(-self.row_taps // 4) * 4
            return [r // kwp * kw + r % kwp if r % kwp < kw else None for r in range(self.rows())]
        if self.taps == 1:
            return list(range(self.k))
        c = self.k // self.taps
        cp = self.rows() // self.taps
        return [(r % cp) * self.taps + r // cp if r % cp < c else None
                for r in range(self.rows())]

    def groups(self) -> int:
        """Groups of 4 rows as stored: padded to a multiple of 16 (an AMX tile's depth)."""
        return -(-self.rows() // 64) * 16

    def nbytes(self) -> int:
        """aotc_qgemm_packed_bytes: k in groups of 4 rows (16 groups a tile), n in panels of
        16 columns (all zero padded), then the panels' int32 column sums."""
        panels = -(-self.n // 16)
        return panels * self.groups() * 64 + panels * 64


@dataclass(frozen=True)
class PackedInt4:
    """An int8 constant [n, k] of int4 values (-8..7), the weight of weight-only linears,
    stored two values a byte as kernels/gemm_w4.cpp reads it (aotc_wo_pack_int4): each row
    in runs of 32 values, byte j of a run holding value j + 8 in its low nibble and value
    16 + j + 8 in its high nibble; k is a multiple of 32. The same layout on every build."""

    LAYOUT: ClassVar[str] = "int4_nibbles"

    k: int
    n: int

    def nbytes(self) -> int:
        return self.n * self.k // 2


@dataclass(frozen=True)
class PackedConvWinograd:
    """A float32 convolution weight [cout, cin, 3, 3] stored as its Winograd F(2x2, 3x3)
    transform, as kernels/conv.cpp reads it (aotc_sconv_pack_winograd): for p = 0..15, the
    matrix u_p [cout, cin] of element (p / 4, p % 4) of G g G^T for each 3x3 g, as the
    GEMM's packed B [cin, cout] (PackedGemmB's layout, this build's nr and kc), one after
    another, each starting on a 64-byte boundary (`stride`)."""

    LAYOUT: ClassVar[str] = "conv_winograd_f2x3"

    cout: int
    cin: int
    nr: int
    kc: int

    def panels(self) -> PackedGemmB:
        """The layout of each u_p^T: B(ci, co) at co * cin + ci of u_p."""
        return PackedGemmB(self.cin, self.cout, 0, 1, self.cin, self.nr, self.kc)

    def stride(self) -> int:
        """Floats from one u_p's packing to the next: rounded up to 64 bytes."""
        return -(-self.panels().floats() // 16) * 16

    def nbytes(self) -> int:
        return 16 * self.stride() * 4


Packing = PackedGemmB | PackedInt8B | PackedInt4 | PackedConvWinograd


@dataclass
class ConstantSpec:
    fqn: str  # fully-qualified name in the state dict (or the lifted constant's name)
    buffer: str
    data: object  # host array (numpy) of the value, frozen at compile time
    folded_from: tuple[str, ...] = ()  # weights a folded constant was computed from (freezing)
    # stored prepacked for its kernel (scheduler/prepack.py); the buffer keeps the user's sizes
    packing: Packing | None = None


@dataclass
class OutputLeaf:
    """One leaf of the output structure: a computed buffer, or a constant (None, a number)."""

    buffer: str | None = None
    value: object = None
    # a symbolic int/float/bool computed at run time into a 0-dim buffer: the loaders
    # return it as a number ("int", "float" or "bool"), as ep.module() does
    scalar: str | None = None


@dataclass
class Program:
    """The whole model in loop-level IR, buffers in a valid execution order."""

    buffers: dict[str, Buffer] = field(default_factory=dict)
    inputs: list[InputSpec] = field(default_factory=list)
    constants: list[ConstantSpec] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # the tensor outputs, in ABI order
    output_leaves: list[OutputLeaf] = field(default_factory=list)  # every leaf, in pytree order
    # shape symbol -> (min, max); max None when unbounded
    symbols: dict[sympy.Symbol, tuple[int, int | None]] = field(default_factory=dict)
    # derived size expression (2*d, d + 1) -> the (min, max) an input dim of that size is
    # checked against (frontend/ranges.py)
    size_ranges: dict[sympy.Expr, tuple[int, int | None]] = field(default_factory=dict)
    # a buffer updated in place -> the buffer holding its value when the run ends: a user
    # input (the run writes the value into the caller's tensor) or a constant buffer that
    # is model state (a registered buffer: each model object keeps its own copy)
    updates: dict[str, str] = field(default_factory=dict)
    # int inputs that export kept symbolic: a 0-dim int64 input buffer -> the shape symbol
    # its value binds at run time
    scalar_inputs: dict[str, sympy.Symbol] = field(default_factory=dict)
    # unbacked symbols: symbol -> its value, evaluated when the inputs are bound: a Node
    # over input buffers only (`.item()`) or an ir.compress.Count (nonzero's row count)
    item_symbols: dict[sympy.Symbol, object] = field(default_factory=dict)
    # buffer computed inside torch.cond branches -> the guards it runs under (ir/control.py)
    guards: dict[str, tuple] = field(default_factory=dict)
    loops: list = field(default_factory=list)  # ir.control.Loop, in program order
    # conditions over shape symbols that export recorded beyond their ranges (a
    # torch._check, an input guard), each with what it is: the run checks every one
    assertions: list[tuple[sympy.Basic, str]] = field(default_factory=list)
    # conditions an op needs of the sizes, where eager raises otherwise (a reduction with
    # no identity over an empty dim, a constant index past a dynamic size, a reshape's -1
    # over zero elements), each with the error message naming the op and the source line:
    # checked with the assertions
    checks: list[tuple[sympy.Basic, str]] = field(default_factory=list)
    # input, constant and output buffers that are complex across the ABI -> that dtype:
    # each holds a complex tensor's (real, imag) pairs, as a last dim of 2 (ir/complex.py)
    complex_views: dict[str, DType] = field(default_factory=dict)

    def add(self, buf: Buffer) -> Buffer:
        if buf.name in self.buffers:
            raise ValueError(f"duplicate buffer name {buf.name}")
        self.buffers[buf.name] = buf
        return buf

    def with_own_buffers(self) -> Program:
        """This program with a buffer table and Buffer objects of its own (ops, which are
        immutable, shared): a stage that edits buffers edits these, its input stays as it was."""
        return dataclasses.replace(self, buffers={n: dataclasses.replace(b)
                                                  for n, b in self.buffers.items()})

    def fresh_name(self, base: str) -> str:
        """`base`, or `base_1`, `base_2`, ...: the first that names no buffer yet."""
        name, k = base, 1
        while name in self.buffers:
            name, k = f"{base}_{k}", k + 1
        return name

    def computed(self) -> list[Buffer]:
        return [b for b in self.buffers.values() if b.kind is BufferKind.COMPUTED]
