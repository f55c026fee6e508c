"""Questions about a buffer of the IR that passes ask alike (dead code, fusion, the memory
plan, codegen): the body its op computes, the buffers it reads."""
from __future__ import annotations

from .expr import Node, loads
from .nodes import Buffer, Pointwise, Reduction, Template


def body_of(op) -> Node | None:
    return op.body if isinstance(op, (Pointwise, Reduction)) else None


def reads_of(buf: Buffer) -> set[str]:
    body = body_of(buf.op)
    if body is not None:
        return {ld.buffer for ld in loads(body)}
    assert isinstance(buf.op, Template)
    return set(buf.op.reads())
