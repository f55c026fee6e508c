"""Prepacked weights: a constant that only ever feeds GEMMs as their B operand is stored in
the GEMM micro-kernel's panel layout, so that no call packs it. So is the weight of a
convolution on a small output plane (its weights dominate its memory traffic), as the B
[Cin*taps, Cout] of the GEMM the kernel then runs (kernels/conv.cpp), and a 3x3 stride-1
convolution's weight as its Winograd transform (the kernel's Winograd path), an int8 constant
that only feeds integer products (IntMatmul), in kernels/gemm_int8.cpp's dot-product layout,
and an int4 weight of weight-only linears (its values -8..7 held in int8) two values a byte,
in kernels/gemm_w4.cpp's layout.
A float16 or bfloat16 constant that GEMMs read only widened to float32 (a half model's
linear weights) is packed too, from its own values: as bfloat16 panels where this machine
runs the bf16 kernel and every A is bfloat16 widened too (then exact: the kernel rounds A to
bfloat16), else widened into float32 panels; never widened on every call.

The layout (kernels/aotc_kernels.h, aotc_sgemm_pack_b) depends on the ISA the package is
built for: the panel width `nr` and slice depth `kc` (the target's gemm_nr and gemm_kc) are
recorded with the constant, and the
model library refuses to start when its kernel's pair differs. `pack_panels` writes the
layout at compile time; a weight swapped at run time is packed by the model library's
aotc_pack_constant, which calls the kernel's own packer. Not here: what the GEMM computes
(ir/nodes.py) and how it is called (codegen/cpp/templates/gemm.py).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import sympy

from ..dtypes import DType
from ..ir.compress import Count
from ..ir.control import loop_buffers, predicate_buffers
from ..ir.expr import Cast, Load, Node, loads
from ..ir.integer import IntMatmul
from ..ir.nodes import (
    SMALL_PLANE,
    Buffer,
    Conv,
    Gemm,
    Operand,
    PackedConvWinograd,
    PackedGemmB,
    PackedInt4,
    PackedInt8B,
    Packing,
    Pointwise,
    Program,
    Template,
)
from ..ir.queries import body_of
from ..ir.symbols import flat_offset, index_vars
from ..ir.weight_only import WeightOnlyMatmul
from ..target import Target
from ..target.host import has_bf16_dot_products
from .precision import pack_panels_bf16

# Narrower weights (a classifier head with a few outputs) would be stored mostly as panel
# padding, and the kernel's few-row paths read them in place.
MIN_PACKED_N = 8


def pack_panels(data: np.ndarray, packing: PackedGemmB) -> np.ndarray:
    """The packed float32 layout of B [K, N], read from the flat constant `data` at the
    packing's offset and strides (the same bytes aotc_sgemm_pack_b writes)."""
    k, n, nr, kc = packing.k, packing.n, packing.nr, packing.kc
    flat = np.ascontiguousarray(data, dtype=np.float32).reshape(-1)
    item = flat.itemsize
    b = np.lib.stride_tricks.as_strided(flat[packing.offset:], shape=(k, n),
                                        strides=(packing.sb_k * item, packing.sb_n * item))
    npad = -(-n // nr) * nr
    padded = np.zeros((k, npad), np.float32)
    padded[:, :n] = b
    out = np.empty(k * npad, np.float32)
    kcb = -(-k // -(-k // kc))
    for pc in range(0, k, kcb):
        rows = min(kcb, k - pc)
        panels = padded[pc:pc + rows].reshape(rows, npad // nr, nr).transpose(1, 0, 2)
        out[pc * npad:(pc + rows) * npad] = panels.reshape(-1)
    return out


def pack_int8_groups(data: np.ndarray, packing: PackedInt8B) -> np.ndarray:
    """The dot-product layout of int8 B [K, N] with its column sums, read from the flat
    constant `data` at the packing's offset and strides (the bytes aotc_qgemm_pack_b writes)."""
    k, n = packing.k, packing.n
    flat = np.ascontiguousarray(data, dtype=np.int8).reshape(-1)
    b = np.lib.stride_tricks.as_strided(flat[packing.offset:], shape=(k, n),
                                        strides=(packing.sb_k, packing.sb_n))
    groups, panels = packing.groups(), -(-n // 16)
    padded = np.zeros((groups * 4, panels * 16), np.int8)
    for row, source in enumerate(packing.source_rows()):
        if source is not None:  # else a padding channel's zero row
            padded[row, :n] = b[source]
    data_part = padded.reshape(groups, 4, panels, 16).transpose(2, 0, 3, 1).reshape(-1)
    sums = padded.astype(np.int32).sum(0, dtype=np.int32)  # the padding adds nothing
    return np.concatenate([data_part.view(np.uint8), sums.view(np.uint8)])


def pack_int4(data: np.ndarray, packing: PackedInt4) -> np.ndarray:
    """The two-a-byte layout of the int4 weight [n, k] (the bytes aotc_wo_pack_int4 writes):
    runs of 32 values, byte j holding value j + 8 (low nibble) and value 16 + j + 8 (high)."""
    q = np.ascontiguousarray(data, dtype=np.int8).reshape(packing.n, packing.k // 32, 2, 16)
    stored = (q.astype(np.int16) + 8) & 15
    return (stored[:, :, 0] | (stored[:, :, 1] << 4)).astype(np.uint8).reshape(-1)


def pack_winograd(data: np.ndarray, packing: PackedConvWinograd) -> np.ndarray:
    """The Winograd F(2x2, 3x3) transform of the weight [cout, cin, 3, 3] in its packed
    layout (the floats aotc_sconv_pack_winograd writes, in the same order of operations):
    u_p = (G g G^T)[p // 4, p % 4] as [cout, cin], each packed as the GEMM's B [cin, cout]."""
    g = np.ascontiguousarray(data, dtype=np.float32).reshape(packing.cout, packing.cin, 3, 3)
    half = np.float32(0.5)

    def rows(a, b, d):  # the rows (or columns) a, b, d of a 3-vector times G^T
        return [a, half * (a + b + d), half * (a - b + d), d]

    gg = rows(g[:, :, 0, :], g[:, :, 1, :], g[:, :, 2, :])  # G g: 4 rows of [cout, cin, 3]
    u = [rows(r[:, :, 0], r[:, :, 1], r[:, :, 2]) for r in gg]
    panels, stride = packing.panels(), packing.stride()
    out = np.zeros((16, stride), np.float32)
    for p in range(16):
        out[p, :panels.floats()] = pack_panels(u[p // 4][p % 4].astype(np.float32), panels)
    return out.reshape(-1)


def packed_bytes(data: np.ndarray, packing: Packing) -> bytes:
    """A constant's bytes as weights.bin stores them in `packing`."""
    if isinstance(packing, PackedConvWinograd):
        return pack_winograd(data, packing).tobytes()
    if isinstance(packing, PackedInt8B):
        return pack_int8_groups(data, packing).tobytes()
    if isinstance(packing, PackedInt4):
        return pack_int4(data, packing).tobytes()
    if packing.dtype == "bfloat16":
        return pack_panels_bf16(data, packing).tobytes()
    return pack_panels(data, packing).tobytes()


def _static(x) -> int | None:
    x = sympy.sympify(x)
    return int(x) if x.is_Integer else None


def _packing_of(op: Gemm, target: Target) -> PackedGemmB | None:
    """How `op` reads its B, when that can be packed once: static sizes and strides, one B
    for every matrix of the batch, at least MIN_PACKED_N columns."""
    values = [_static(x) for x in (op.k, op.n, op.b.offset, *op.b.strides)]
    if any(v is None for v in values):
        return None
    k, n, offset, batch_stride, sb_k, sb_n = (int(v) for v in values if v is not None)
    if not k or n < MIN_PACKED_N or (batch_stride != 0 and _static(op.batch) != 1):
        return None
    return PackedGemmB(k, n, offset, sb_k, sb_n, target.gemm_nr, target.gemm_kc)


# Winograd F(2x2, 3x3) takes 3x3 convolutions with at least this many input and output
# channels (on fewer its transforms cost about what the multiplies it saves do) and at least
# WINOGRAD_MIN_TILES 2x2 tiles of output (on fewer, planes of 6x6 and smaller, the transformed
# weight, 16/9 the size of the weight, is read for too little work: the GEMM path is as fast)
WINOGRAD_MIN_CHANNELS = 32
WINOGRAD_MIN_TILES = 16
# With WINOGRAD_MIN_TILES tiles exactly (a 7x7 or 8x8 plane), Winograd also needs this many
# output channels: its 16 products of 16 tile rows are too thin for the GEMM's tiles with
# few columns. One thread, Zen 4: DenseNet-121's 128 -> 32 at 7x7 75 us by Winograd, 58 by
# the packed GEMM; ResNet-18's 512 -> 512 at 7x7 1530 us by Winograd, 2310 by the GEMM.
WINOGRAD_FEW_TILES_MIN_COUT = 64


def winograd(op: Conv, cin: int | None, cout: int | None) -> bool:
    """Whether the convolution takes the kernel's Winograd path: forward, 2-D, 3x3, stride 1,
    dilation 1, one group, static channels, WINOGRAD_MIN_CHANNELS of them in and out, and
    an output plane of WINOGRAD_MIN_TILES tiles or more (or of sizes known at run time),
    WINOGRAD_FEW_TILES_MIN_COUT output channels where it has no more."""
    if (op.transposed or op.groups != 1 or op.kernel != (3, 3) or op.stride != (1, 1)
            or op.dilation != (1, 1) or cin is None or cout is None
            or min(cin, cout) < WINOGRAD_MIN_CHANNELS):
        return False
    ho, wo = (_static(s) for s in op.out_size)
    if ho is None or wo is None:
        return True
    tiles = -(-ho // 2) * -(-wo // 2)
    return tiles > WINOGRAD_MIN_TILES or (tiles == WINOGRAD_MIN_TILES
                                          and cout >= WINOGRAD_FEW_TILES_MIN_COUT)


def _conv_packing(op: Conv, target: Target) -> PackedGemmB | PackedConvWinograd | None:
    """How the convolution reads its weight packed: as its Winograd transform (winograd),
    or as the GEMM's B (element (k, n) at n*K + k of the [Cout, Cin, k...] weight) when the
    kernel's packed GEMM path pays: forward, one group, more than one input channel (not
    the depthwise path), static channels, an output plane of fewer than SMALL_PLANE
    positions (larger ones take the direct kernel) and no fewer weight rows K than
    positions (below that, a 1x1 or strided 1x1 convolution moves more output through the
    transposing store than weight through the packing it saves); and always where the
    convolution reads or writes channels-last activations (scheduler/layout.py: the kernel
    reads those with the weight packed, one group)."""
    cin, cout = _static(op.in_channels), _static(op.out_channels)
    if op.x_channels_last or op.out_channels_last:
        if op.groups != 1 or cin is None or cout is None:
            return None  # depthwise: read as it is
        k = cin * math.prod(op.kernel)
        return PackedGemmB(k, cout, 0, 1, k, target.gemm_nr, target.gemm_kc)
    if winograd(op, cin, cout):
        assert cin is not None and cout is not None
        return PackedConvWinograd(cout, cin, target.gemm_nr, target.gemm_kc)
    plane = _static(sympy.Mul(*op.out_size))
    if op.transposed or op.groups != 1 or cin is None or cout is None or plane is None:
        return None
    if cin < 2 or cout < MIN_PACKED_N or plane >= SMALL_PLANE:
        return None
    k = cin * math.prod(op.kernel)
    if k < plane:
        return None
    return PackedGemmB(k, cout, 0, 1, k, target.gemm_nr, target.gemm_kc)


def _int8_packing(op: IntMatmul, target: Target) -> PackedInt8B | None:
    """How `op` reads its B, when that can be packed once: static sizes, offset, strides."""
    values = [_static(x) for x in (op.k, op.n, op.b.offset, *op.b.strides)]
    if any(v is None for v in values):
        return None
    k, n, offset, sb_k, sb_n = (int(v) for v in values if v is not None)
    return PackedInt8B(k, n, offset, sb_k, sb_n, op.taps(), op.row_taps()) if k and n else None


def _int4_packing(op: WeightOnlyMatmul, data) -> PackedInt4 | None:
    """How the int4 weight `data` of `op` can be stored two a byte: static sizes, K and the
    group in whole runs of 32 values, and every value in -8..7 (torchao's int4 range; a
    weight holding others, which dequantize_affine would use as they are, stays a byte a
    value)."""
    k, n = _static(op.k), _static(op.n)
    if op.bits != 4 or not k or not n or k % 32 or op.group % 32:
        return None
    if math.prod(data.shape) != k * n or int(data.min()) < -8 or int(data.max()) > 7:
        return None
    return PackedInt4(k, n)


HALF = (DType.float16, DType.bfloat16)


def _widenings(program: Program, readers: dict[str, list], elsewhere: set[str]
               ) -> dict[str, list[Buffer]]:
    """Half constant -> the buffers that hold nothing but it widened to float32, 2-D, and
    are read only as the B of GEMMs (what a half linear lowers to, lowering/opmath.py)."""
    constants = {c.buffer for c in program.constants}
    out: dict[str, list[Buffer]] = {}
    for buf in program.computed():
        body = buf.op.body if isinstance(buf.op, Pointwise) else None
        if (not isinstance(body, Cast) or body.dtype is not DType.float32
                or not isinstance(body.x, Load) or body.x.buffer not in constants
                or body.x.dtype not in HALF or len(buf.sizes) != 2 or buf.name in elsewhere):
            continue
        uses = readers.get(buf.name, [])
        if uses and all(u is not None and u[0] == "b" for u in uses):
            out.setdefault(body.x.buffer, []).append(buf)
    return out


def _read_through(op: Gemm, widened: Buffer, source: Buffer) -> Gemm | None:
    """`op` reading the half constant under `widened` in place of `widened` (B's element
    (k, n) at the constant's own offset and strides), when B is `widened` [K, N] read
    row-major or transposed, one matrix for the whole batch."""
    assert isinstance(widened.op, Pointwise) and isinstance(widened.op.body, Cast)
    load = widened.op.body.x
    assert isinstance(load, Load)
    batch_stride, sb_k, sb_n = op.b.strides
    if op.b.offset != 0 or (batch_stride != 0 and _static(op.batch) != 1):
        return None
    cols = widened.sizes[1]
    k, n = sympy.Symbol("k", integer=True), sympy.Symbol("n", integer=True)
    i0, i1 = index_vars(2)
    if sympy.simplify(sb_k - cols) == 0 and sympy.simplify(sb_n - 1) == 0:
        at = {i0: k, i1: n}
    elif sympy.simplify(sb_k - 1) == 0 and sympy.simplify(sb_n - cols) == 0:
        at = {i0: n, i1: k}
    else:
        return None
    flat = sympy.expand(flat_offset(load.index, source.sizes).xreplace(at))
    ck, cn = flat.coeff(k), flat.coeff(n)
    rest = sympy.expand(flat - ck * k - cn * n)
    if any(e.has(k, n) for e in (ck, cn, rest)):
        return None
    return dataclasses.replace(op, b=Operand(source.name, rest, (sympy.Integer(0), ck, cn)))


def _holds_bfloat16(program: Program, name: str) -> bool:
    """Whether buffer `name` holds bfloat16 values widened to float32 (so the bf16 kernel,
    which rounds A to bfloat16, reads it exactly): a pointwise buffer, or a GEMM's fused
    epilogue, whose value is a cast from bfloat16, as a half model's activations are."""
    op = program.buffers[name].op
    body = (op.body if isinstance(op, Pointwise) else
            op.epilogue if isinstance(op, Gemm) else None)
    return isinstance(body, Cast) and body.x.dtype is DType.bfloat16


def _pack_widened(program: Program, c_buffer: str, widened: list[Buffer],
                  readers: dict[str, list], target: Target) -> PackedGemmB | None:
    """Point the GEMMs that read `widened` at the half constant itself, packed; drop the
    widened copies. None (nothing changed) when they do not all read it alike."""
    source = program.buffers[c_buffer]
    gemms = [(u[1], w) for w in widened for u in readers[w.name]]
    direct = [_read_through(g.op, w, source) for g, w in gemms]
    found = {None if d is None else _packing_of(d, target) for d in direct}
    if len(found) != 1 or None in found:
        return None
    packing = found.pop()
    assert packing is not None
    bf16 = (source.dtype is DType.bfloat16 and has_bf16_dot_products(target)
            and all(_holds_bfloat16(program, g.op.a.buffer) for g, _ in gemms))
    if bf16:
        packing = dataclasses.replace(packing, dtype="bfloat16")
    for (g, _), d in zip(gemms, direct):
        assert d is not None  # every GEMM reads it through, as `found` says
        g.op = dataclasses.replace(d, b_packed=True, b_bf16=bf16, b_half=not bf16, b=Operand(
            c_buffer, sympy.Integer(0), (sympy.Integer(0),) * 3))
    for w in widened:
        del program.buffers[w.name]
    return packing


def _packable_operand(op: Template) -> tuple[str, str] | None:
    """(buffer, role) of the operand a kernel template can read prepacked: a convolution's
    weight ("conv"), an integer product's B ("int8_b"), an int4 weight-only linear's weight
    ("int4_q"); None for other ops."""
    if isinstance(op, Conv):
        return op.weight, "conv"
    if isinstance(op, IntMatmul):
        return op.b.buffer, "int8_b"
    if isinstance(op, WeightOnlyMatmul) and op.bits == 4:
        return op.q, "int4_q"
    return None


def _readers(program: Program) -> dict[str, list]:
    """Buffer -> the ops that read it (a Gemm once per operand it reads it as, a Conv as
    ("conv", buffer) for its weight, an IntMatmul as ("int8_b", buffer) for its B, an int4
    WeightOnlyMatmul as ("int4_q", buffer) for its weight)."""
    out: dict[str, list] = {}
    for buf in program.computed():
        body = body_of(buf.op)
        if body is not None:
            for ld in loads(body):
                out.setdefault(ld.buffer, []).append(None)
        elif isinstance(buf.op, Gemm):
            for role, o in (("a", buf.op.a), ("b", buf.op.b), ("bias", buf.op.bias)):
                if o is not None:
                    out.setdefault(o.buffer, []).append((role, buf))
        elif isinstance(buf.op, Template) and (packable := _packable_operand(buf.op)):
            packed, role = packable
            others = list(buf.op.reads())  # the input, scales, zero points, an epilogue's reads
            others.remove(packed)  # any other read of the same buffer stays in
            for name in others:
                out.setdefault(name, []).append(None)
            out.setdefault(packed, []).append((role, buf))
        elif isinstance(buf.op, Template):
            for name in buf.op.reads():
                out.setdefault(name, []).append(None)
    return out


def prepack_weights(program: Program, target: Target, precision: str = "fp32") -> Program:
    """Mark each float32 constant read only as the B of GEMMs (all reading it alike) as
    packed, and those GEMMs as reading it packed; with precision "bf16", a GEMM weight
    (not a convolution's) is packed as bfloat16 (scheduler/precision.py). An int8 constant
    read only as the B of integer products, alike, is packed for them, and one read only as
    the int4 weight of weight-only linears, two values a byte. Returns a new program."""
    program = program.with_own_buffers()
    readers = _readers(program)
    elsewhere = (set(program.outputs) | set(program.updates) | set(program.updates.values())
                 | predicate_buffers(program.guards) | loop_buffers(program.loops))
    for value in program.item_symbols.values():  # a Node, or a Count over a mask Node
        node: Node = value.mask if isinstance(value, Count) else value  # type: ignore[assignment]
        elsewhere |= {ld.buffer for ld in loads(node)}
    widenings = _widenings(program, readers, elsewhere)
    specs = []
    for c in program.constants:
        buf = program.buffers[c.buffer]
        uses = readers.get(c.buffer, [])
        packing: Packing | None = None
        role = {u[0] if u is not None else None for u in uses}
        if buf.dtype is DType.int8 and c.buffer not in elsewhere and uses and role == {"int8_b"}:
            found8 = {_int8_packing(u[1].op, target) for u in uses}
            if len(found8) == 1 and None not in found8:
                packing = found8.pop()
        elif buf.dtype is DType.int8 and c.buffer not in elsewhere and uses and role == {"int4_q"}:
            found4 = {_int4_packing(u[1].op, c.data) for u in uses}
            if len(found4) == 1 and None not in found4:
                packing = found4.pop()
        elif (buf.dtype is DType.float32 and c.buffer not in elsewhere and uses
                and len(role) == 1 and role <= {"b", "conv"}):
            packing_of = _packing_of if role == {"b"} else _conv_packing
            found = {packing_of(u[1].op, target) for u in uses}
            if len(found) == 1 and None not in found:
                one = found.pop()
                assert one is not None
                packing = (dataclasses.replace(one, dtype="bfloat16")
                           if precision == "bf16" and isinstance(one, PackedGemmB)
                           and role == {"b"} else one)
        elif (buf.dtype in HALF and c.buffer not in elsewhere and c.buffer in widenings
                and len(uses) == len(widenings[c.buffer]) and None in role and len(role) == 1
                and math.prod(int(s) for s in buf.sizes) > 0):
            # read only by its widened copies: the GEMMs read it packed, the copies go
            half = _pack_widened(program, c.buffer, widenings[c.buffer], readers, target)
            if half is not None:
                specs.append(dataclasses.replace(c, packing=half))
                continue
        if packing is not None and math.prod(int(s) for s in buf.sizes) == 0:
            packing = None
        if packing is not None:
            for kind, reader in uses:
                if kind == "int8_b":
                    reader.op = dataclasses.replace(reader.op, b_packed=True, b=Operand(
                        c.buffer, sympy.Integer(0), (sympy.Integer(0),) * 2))
                elif kind == "int4_q":
                    reader.op = dataclasses.replace(reader.op, q_nibbles=True)
                elif kind == "conv" and isinstance(packing, PackedConvWinograd):
                    reader.op = dataclasses.replace(reader.op, weight_winograd=True)
                elif kind == "conv":
                    reader.op = dataclasses.replace(reader.op, weight_packed=True)
                else:
                    reader.op = dataclasses.replace(
                        reader.op, b_packed=True, b_bf16=getattr(packing, "dtype", "") == "bfloat16",
                        b=Operand(
                        c.buffer, sympy.Integer(0), (sympy.Integer(0),) * 3))
            c = dataclasses.replace(c, packing=packing)
        specs.append(c)
    program.constants = specs
    return program
