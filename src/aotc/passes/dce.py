"""Dead-code removal: drop computed buffers that no output depends on."""
from __future__ import annotations

import dataclasses

from ..ir.binding import binding_buffers
from ..ir.control import loop_buffers, predicate_buffers
from ..ir.nodes import BufferKind, Program
from ..ir.queries import reads_of


def remove_dead_buffers(program: Program) -> Program:
    """A new program without the computed buffers no output, update, guard or loop needs."""
    live = set(program.outputs) | set(program.updates.values()) | predicate_buffers(
        program.guards) | loop_buffers(program.loops) | binding_buffers(program)
    for buf in reversed(program.computed()):
        if buf.name in live:
            live |= reads_of(buf)
    # constants nobody reads stay in the package: their order is the ABI's constants table
    return dataclasses.replace(program, buffers={
        n: b for n, b in program.buffers.items() if b.kind is not BufferKind.COMPUTED or n in live})


__all__ = ["remove_dead_buffers"]
