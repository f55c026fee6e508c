"""Channels-last activations between convolutions.

A quantized convolution's integer product (IntMatmul with patches, lowering/quantize.py)
reads its input a whole run of channels per tap, from a channels-last copy it makes of the
input, and finishes its sums row-major, [positions, channels], which it then transposes
into channel planes. Between two such convolutions both steps are waste. This pass stores
the activations of their chains channels last instead: each convolution's output, and every
pointwise or reduction buffer of four dims that reads such activations along the channel
axis and reads nothing else that varies over the positions (the dequantize and requantize
around a convolution, its ReLU, a residual add, a max pool). The next convolution then
reads its input in place, and every kernel in between runs along the channels.

A buffer so chosen still holds its [n, c, h, w] tensor: its sizes become [n, h, w, c], its
own body is written over that order and every load of it is permuted to match. A buffer is
chosen only where every reader follows: a loop body (its loads are rewritten) or a
tap-major convolution reading it as its input (or any reader, where its planes are single
positions: then both orders lie alike in memory); never an output or anything else read
outside a kernel (ir/queries.held_buffers); and only on the way to another chosen buffer or
a kernel that reads it in place, so that a chain ending in an output stays channels first and still runs as
one loop (or as its convolution's epilogue). The choice changes where values lie, never
which values are computed.

Float32 convolutions take part where the target builds the convolution kernel's vector
paths (Target.vector_convs): a 1x1 stride-1 one and a depthwise one (one channel per group)
read and write channels last, and a one-group convolution of an image's few channels (a
network's stem) writes channels last from its channels-first input (kernels/aotc_kernels.h:
aotc_conv_shape.layout; kernels/conv_stem.h). A MobileNet then runs channels last from its stem to its pooled
head: the depthwise kernel skips the transposes of its channel blocks in and out, the 1x1
convolutions store their rows with the residual and activation in the GEMM's tiles. A
convolution whose residual is added by its kernel is chosen with that residual or not at
all. 3x3 convolutions on the Winograd path and wider ones on the direct kernel stay
channels first, and so does whatever reads from them.

The order of the patches of the convolutions that still read their input channels first is
chosen here too, for the target (row_groups).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import sympy

from ..ir.expr import IndirectLoad, Load, Node, loads, substitute_index, transform
from ..ir.integer import IntMatmul
from ..ir.nodes import Buffer, Conv, Pointwise, Program, Reduction, Template
from ..ir.queries import held_buffers, reads_of
from ..ir.symbols import index_vars
from ..target import Target
from .prepack import winograd

# the most input channels of a one-group convolution that writes channels last from a
# channels-first input: an image's channels, a network's stem
STEM_CHANNELS = 4

_N, _C, _H, _W = index_vars(4)
# a chosen buffer's own index variables: the channel (i1) is now its last axis, h and w
# the middle ones
_RENAME = {_C: _W, _H: _C, _W: _H}


def _static(x) -> int | None:
    x = sympy.sympify(x)
    return int(x) if x.is_Integer else None


def _conv_kind(buf: Buffer, packable: set[str]) -> str | None:
    """How a float32 convolution meets channels-last activations (the module's docstring):
    "pointwise" and "depthwise" read and write them, "stem" writes them; None: neither.
    Pointwise and stem convolutions need their weight packed (`packable`)."""
    op = buf.op
    if not isinstance(op, Conv) or op.transposed or len(op.kernel) != 2:
        return None
    cin, cout = _static(op.in_channels), _static(op.out_channels)
    if cin is None or cout is None:
        return None
    if op.groups > 1 and op.groups == cin == cout:
        return "depthwise"
    if op.groups != 1 or op.weight not in packable:
        return None
    if op.kernel == (1, 1) and op.stride == (1, 1) and op.padding == (0, 0):
        return "pointwise"
    return "stem" if cin <= STEM_CHANNELS and not winograd(op, cin, cout) else None


def _packable(program: Program, readers: dict[str, list[Buffer]]) -> set[str]:
    """The constants that convolutions alone read, as their weight only, and nothing reads
    outside a kernel: prepack stores a float32 one packed for them."""
    held = held_buffers(program)
    return {c.buffer for c in program.constants if c.buffer not in held and all(
        isinstance(r.op, Conv) and c.buffer == r.op.weight
        and c.buffer not in (r.op.x, r.op.bias, r.op.residual) for r in readers[c.buffer])}


def _starts(buf: Buffer, kinds: dict[str, str]) -> bool:
    """A convolution's integer product (its sums are row-major anyway), or a float32
    convolution that writes channels last."""
    op = buf.op
    return (isinstance(op, IntMatmul) and op.patches is not None and len(buf.sizes) == 4
            or buf.name in kinds)


def _follows(buf: Buffer, chosen: set[str]) -> bool:
    """A loop of four dims that reads chosen buffers at its own channel, and anything else
    only where that does not vary over the positions (a per-channel scale, a number)."""
    op = buf.op
    if not isinstance(op, (Pointwise, Reduction)) or len(buf.sizes) != 4:
        return False
    found = False
    for ld in loads(op.body):
        if isinstance(ld, IndirectLoad):
            return False
        if ld.buffer in chosen:
            if sympy.sympify(ld.index[1]) != _C:
                return False
            found = True
        elif any(sympy.sympify(e).free_symbols & {_H, _W} for e in ld.index):
            return False
    return found


def _single_positions(buf: Buffer) -> bool:
    """Planes of one position: [n, c, 1, 1] lies in memory as [n, 1, 1, c] does."""
    return all(sympy.sympify(s) == 1 for s in buf.sizes[2:])


def _reads_along(reader: Buffer, buf: Buffer, chosen: set[str], kinds: dict[str, str]) -> bool:
    """Whether `reader` can read `buf` stored channels last: a loop body whose loads of it
    are rewritten (none data-dependent), a tap-major convolution reading it as its input, a
    float32 depthwise convolution reading it as its input, a float32 pointwise one that
    writes channels last too (one that writes channels first stores its product transposed,
    which costs more than the packing of a channels-first x it saves: DenseNet-121's first
    1x1, 64 -> 128 channels at 56x56, 525 -> 954 us), a convolution adding it as its
    residual into its own channels-last output, or any kernel where the planes are single
    positions (it reads memory that lies alike: a pooled head's input to a linear)."""
    name = buf.name
    op = reader.op
    if isinstance(op, (Pointwise, Reduction)):
        return not any(isinstance(ld, IndirectLoad) and ld.buffer == name
                       for ld in loads(op.body))
    if _single_positions(buf):
        return True
    if isinstance(op, Conv):
        if name in (op.weight, op.bias):
            return False
        kind = kinds.get(reader.name)
        return ((name != op.x or kind == "depthwise"
                 or kind == "pointwise" and reader.name in chosen)
                and (name != op.residual or reader.name in chosen))
    return (isinstance(op, IntMatmul) and op.patches is not None and op.taps_major
            and op.a.buffer == name and name not in (op.b.buffer, op.a_zero_buffer))


def _residual_follows(buf: Buffer, program: Program, chosen: set[str]) -> bool:
    """A convolution's residual lies as its output does: chosen with it (or single
    positions, which lie alike)."""
    op = buf.op
    return (not isinstance(op, Conv) or op.residual is None or op.residual in chosen
            or _single_positions(program.buffers[op.residual]))


def _permuted(body: Node, chosen: set[str]) -> Node:
    """`body` with every load of a chosen buffer indexed (n, h, w, c)."""
    def leaf(x: Node) -> Node:
        if isinstance(x, Load) and x.buffer in chosen:
            n, c, h, w = x.index
            return Load(x.buffer, (n, h, w, c), x.dtype)
        return x
    return transform(body, leaf)


def channels_last(program: Program, target: Target) -> Program:
    """Store the activations of convolution chains channels last (see above). Returns a new
    program (the one given is left as it was)."""
    held = held_buffers(program)
    readers: dict[str, list[Buffer]] = defaultdict(list)
    for buf in program.computed():
        for name in reads_of(buf):
            readers[name].append(buf)
    kinds: dict[str, str] = {}
    if target.vector_convs:
        packable = _packable(program, readers)
        kinds = {buf.name: kind for buf in program.computed()
                 if (kind := _conv_kind(buf, packable)) is not None}
    chosen: set[str] = set()
    for buf in program.computed():
        if buf.name not in held and (_starts(buf, kinds) or _follows(buf, chosen)):
            chosen.add(buf.name)
    # every reader must read a chosen buffer channels last, and a convolution's residual lie
    # as its output; channels last pays only on the way to a chosen buffer, a kernel that
    # reads it in place (a convolution), in a float32 network a pooled head (a reduction to
    # single positions sums each channel down its column; quantized networks keep their
    # measured choice) or single positions (both layouts alike): the chain into an output
    # stays channels first (fusion runs it as one loop, or as the epilogue of the
    # convolution that starts it). A max or average pool over windows is no such end:
    # DenseNet-121's 7x7 stem (64 output channels) would otherwise write channels last for
    # its max pool alone, from columns, at 2.9 ms a call against the direct kernel's 2.4. Dropping one buffer
    # can drop others (a convolution's residual, its input's last consumer): until none
    # changes.
    pooled_heads = not any(isinstance(b.op, IntMatmul) for b in program.computed())

    def consumer(reader: Buffer) -> bool:
        return isinstance(reader.op, Template) or (
            pooled_heads and isinstance(reader.op, Reduction) and _single_positions(reader))

    while True:
        drop = {n for n in chosen
                if not all(_reads_along(r, program.buffers[n], chosen, kinds) for r in readers[n])
                or not _residual_follows(program.buffers[n], program, chosen)
                or not _single_positions(program.buffers[n]) and not any(
                    r.name in chosen or consumer(r) for r in readers[n])}
        if not drop:
            break
        chosen -= drop
    if not chosen:
        return program
    program = program.with_own_buffers()
    for buf in program.computed():
        op = buf.op
        mine = buf.name in chosen
        if isinstance(op, (Pointwise, Reduction)):
            body = _permuted(op.body, chosen)
            if mine:
                body = substitute_index(body, _RENAME)
            buf.op = (Pointwise(body) if isinstance(op, Pointwise)
                      else Reduction(op.reduce_type, op.ranges, body))
        elif isinstance(op, IntMatmul) and op.patches is not None:
            buf.op = replace(op, x_channels_last=op.taps_major and op.a.buffer in chosen,
                             out_channels_last=mine)
        elif isinstance(op, Conv) and buf.name in kinds:
            reads_last = kinds[buf.name] in ("pointwise", "depthwise") and op.x in chosen
            buf.op = replace(op, x_channels_last=reads_last, out_channels_last=mine)
        if mine:
            n, c, h, w = buf.sizes
            buf.sizes = (n, h, w, c)
    return program


def row_groups(program: Program, vector_bytes: int) -> Program:
    """Order the patches of channels-first quantized convolutions by kernel rows padded to
    whole groups (IntMatmul.row_groups) where the kernel gathers them with 512-bit vectors
    (vector_bytes 64): a kernel row of kw taps, kw >= 4 and kw % 4 in (0, 3) (at most a
    seventh more products: ResNet's 7x7 stem), stride at most 4 along the row, no dilation.
    Sixteen rows of a group are then a shuffle of one load (kernels/gemm_int8.cpp:
    pack_row_groups): ResNet-50's stem at 224x224, one thread, in the model 1040-1210 ->
    918-1069 us, where the 3x3 stems' third more products cost more than the gather saves
    (3 -> 32 channels at stride 2: 205 -> 221 us). Returns a new program where one changes."""
    def chosen(op) -> bool:
        if not isinstance(op, IntMatmul) or op.patches is None or op.taps_major:
            return False
        kw, sw, dw = op.patches[4], op.patches[8], op.patches[12]
        return vector_bytes == 64 and kw >= 4 and kw % 4 in (0, 3) and sw <= 4 and dw == 1
    if not any(chosen(buf.op) for buf in program.computed()):
        return program
    program = program.with_own_buffers()
    for buf in program.computed():
        op = buf.op
        if isinstance(op, IntMatmul) and chosen(op):
            buf.op = replace(op, row_groups=True)
    return program
