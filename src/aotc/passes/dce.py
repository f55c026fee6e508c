"""Dead-code removal: drop computed buffers that no output depends on."""
from __future__ import annotations

from ..ir.binding import binding_buffers
from ..ir.control import loop_buffers, predicate_buffers
from ..ir.nodes import Program
from ..scheduler.memory import reads_of


def remove_dead_buffers(program: Program) -> Program:
    live = set(program.outputs) | set(program.updates.values()) | predicate_buffers(
        program.guards) | loop_buffers(program.loops) | binding_buffers(program)
    for buf in reversed(program.computed()):
        if buf.name in live:
            live |= reads_of(buf)
    for name in [b.name for b in program.computed() if b.name not in live]:
        del program.buffers[name]
    # constants nobody reads stay in the package: their order is the ABI's constants table
    return program


__all__ = ["remove_dead_buffers"]
