"""Questions about a buffer of the IR that passes ask alike (dead code, fusion, the memory
plan, codegen): the body its op computes, the buffers it reads."""
from __future__ import annotations

from .binding import binding_buffers
from .control import loop_buffers, predicate_buffers
from .expr import Node, loads
from .nodes import Buffer, Pointwise, Program, Reduction, Template


def body_of(op) -> Node | None:
    return op.body if isinstance(op, (Pointwise, Reduction)) else None


def reads_of(buf: Buffer) -> set[str]:
    body = body_of(buf.op)
    if body is not None:
        return {ld.buffer for ld in loads(body)}
    assert isinstance(buf.op, Template)
    return set(buf.op.reads())


def held_buffers(program: Program) -> set[str]:
    """Buffers read as they are by something other than a loop body or a template: the
    outputs, the updated state, torch.cond predicates, loop state and the symbols bound
    from buffers. They stay materialized, in the layout their sizes say."""
    return (set(program.outputs) | set(program.updates.values())
            | predicate_buffers(program.guards) | loop_buffers(program.loops)
            | binding_buffers(program))
