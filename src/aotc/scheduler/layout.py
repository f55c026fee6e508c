"""Channels-last activations between quantized convolutions.

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

The order of the patches of the convolutions that still read their input channels first is
chosen here too, for the target (row_groups).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import sympy

from ..ir.expr import IndirectLoad, Load, Node, loads, substitute_index, transform
from ..ir.integer import IntMatmul
from ..ir.nodes import Buffer, Pointwise, Program, Reduction, Template
from ..ir.queries import held_buffers, reads_of
from ..ir.symbols import index_vars

_N, _C, _H, _W = index_vars(4)
# a chosen buffer's own index variables: the channel (i1) is now its last axis, h and w
# the middle ones
_RENAME = {_C: _W, _H: _C, _W: _H}


def _starts(buf: Buffer) -> bool:
    """A convolution's integer product: its sums are row-major anyway."""
    op = buf.op
    return isinstance(op, IntMatmul) and op.patches is not None and len(buf.sizes) == 4


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


def _reads_along(reader: Buffer, buf: Buffer) -> bool:
    """Whether `reader` can read `buf` stored channels last: a loop body whose loads of it
    are rewritten (none data-dependent), a tap-major convolution reading it as its input, or
    any kernel where the planes are single positions (it reads memory that lies alike: a
    pooled head's input to a linear)."""
    name = buf.name
    op = reader.op
    if isinstance(op, (Pointwise, Reduction)):
        return not any(isinstance(ld, IndirectLoad) and ld.buffer == name
                       for ld in loads(op.body))
    if _single_positions(buf):
        return True
    return (isinstance(op, IntMatmul) and op.patches is not None and op.taps_major
            and op.a.buffer == name and name not in (op.b.buffer, op.a_zero_buffer))


def _permuted(body: Node, chosen: set[str]) -> Node:
    """`body` with every load of a chosen buffer indexed (n, h, w, c)."""
    def leaf(x: Node) -> Node:
        if isinstance(x, Load) and x.buffer in chosen:
            n, c, h, w = x.index
            return Load(x.buffer, (n, h, w, c), x.dtype)
        return x
    return transform(body, leaf)


def channels_last(program: Program) -> Program:
    """Store the activations of quantized convolution chains channels last (see above).
    Returns a new program (the one given is left as it was)."""
    held = held_buffers(program)
    chosen: set[str] = set()
    for buf in program.computed():
        if buf.name not in held and (_starts(buf) or _follows(buf, chosen)):
            chosen.add(buf.name)
    readers: dict[str, list[Buffer]] = defaultdict(list)
    for buf in program.computed():
        for name in reads_of(buf):
            readers[name].append(buf)
    chosen = {n for n in chosen
              if all(_reads_along(r, program.buffers[n]) for r in readers[n])}
    # channels last pays only on the way to a chosen buffer, a kernel that reads it in place
    # (a convolution) or a pooled head (single positions: both layouts alike): the chain
    # into an output stays channels first (fusion runs it as one loop, or as the epilogue
    # of the convolution that starts it)
    while True:
        idle = {n for n in chosen if not _single_positions(program.buffers[n]) and not any(
            r.name in chosen or isinstance(r.op, Template) for r in readers[n])}
        if not idle:
            break
        chosen -= idle
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
