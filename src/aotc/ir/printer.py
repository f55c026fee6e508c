"""A stable text form of the IR, for dumps (`AOTC_DEBUG_DIR`) and Before/Expected tests."""
from __future__ import annotations

from .expr import Binary, Cast, Constant, IndexValue, IndirectLoad, Load, Node, Unary, Where
from .nodes import Buffer, BufferKind, Pointwise, Program, Reduction, Template


def format_index(index) -> str:
    return ", ".join(str(i) for i in index)


def format_expr(e: Node) -> str:
    if isinstance(e, Load):
        return f"{e.buffer}[{format_index(e.index)}]"
    if isinstance(e, IndirectLoad):
        given = ", ".join(f"ind{j}={format_expr(v)} in [0, {b})"
                          for j, (v, b) in enumerate(zip(e.indirect, e.bounds)))
        return f"{e.buffer}[{format_index(e.index)} | {given}{', wrapped' if e.wrap else ''}]"
    if isinstance(e, Constant):
        return f"{e.value!r}:{e.dtype.name}"
    if isinstance(e, IndexValue):
        return f"idx({e.expr}):{e.dtype.name}"
    if isinstance(e, Unary):
        return f"{e.op.value}({format_expr(e.x)})"
    if isinstance(e, Binary):
        return f"{e.op.value}({format_expr(e.a)}, {format_expr(e.b)})"
    if isinstance(e, Where):
        return f"where({format_expr(e.cond)}, {format_expr(e.a)}, {format_expr(e.b)})"
    if isinstance(e, Cast):
        return f"{e.dtype.name}({format_expr(e.x)})"
    raise TypeError(f"not an IR expression: {e!r}")


def format_buffer(b: Buffer) -> str:
    head = f"{b.name}: {b.dtype.name}[{format_index(b.sizes)}]"
    if b.kind is not BufferKind.COMPUTED:
        return f"{head} = {b.kind.value}"
    op = b.op
    if isinstance(op, Pointwise):
        return f"{head} = pointwise {format_expr(op.body)}"
    if isinstance(op, Reduction):
        return (f"{head} = {op.reduce_type.value} over ({format_index(op.ranges)}) "
                f"of {format_expr(op.body)}")
    if isinstance(op, Template):
        return f"{head} = {op.describe()}"
    raise TypeError(f"unknown op {op!r}")


def format_program(p: Program) -> str:
    lines = [format_buffer(b) for b in p.buffers.values()]
    lines.append("outputs: " + ", ".join(p.outputs))
    return "\n".join(lines) + "\n"
