"""Row groups: reductions over the last axis and the pointwise op that reads them, run as
one loop nest per row (softmax: max, sum of exp, divide; layer norm: mean, variance,
normalize). The row stays in cache, and reduction results that nobody else reads live in
registers instead of memory.

The scheduler's output is the kernel sequence: each item is a Buffer (its own kernel) or a
RowGroup (one kernel for several buffers).
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..ir.expr import IndirectLoad, loads
from ..ir.nodes import Buffer, Pointwise, Program, Reduction
from ..ir.queries import body_of, held_buffers, reads_of
from ..ir.symbols import index_vars


@dataclass
class RowGroup:
    """Buffers computed per row of `outer` (the shared leading axes): reductions over the
    last axis of length `row` and values per row, then at most one pointwise buffer over
    (*outer, row)."""

    outer: tuple[sympy.Expr, ...]
    row: sympy.Expr
    members: list[Buffer]
    local: set[str]  # reduction results read only inside the group: never stored

    @property
    def name(self) -> str:
        return "_".join(m.name for m in self.members[-1:]) + "_rows"


Scheduled = Buffer | RowGroup


def kernel_members(schedule: list[Scheduled]) -> list[list[Buffer]]:
    """The buffers each kernel of the schedule computes (what the memory plan steps over)."""
    return [item.members if isinstance(item, RowGroup) else [item] for item in schedule]


def local_buffers(schedule: list[Scheduled]) -> frozenset[str]:
    """Buffers that live in registers inside their row group and need no memory."""
    return frozenset(n for item in schedule if isinstance(item, RowGroup) for n in item.local)


def _row_reduction(buf: Buffer) -> tuple | None:
    """(outer, row) when `buf` reduces one last axis into a keepdim unit axis."""
    op = buf.op
    if not isinstance(op, Reduction) or len(op.ranges) != 1 or not buf.sizes:
        return None
    if buf.sizes[-1] != 1 or op.ranges[0] == 1:
        return None
    return tuple(buf.sizes[:-1]), op.ranges[0]


def _reads_rows_only(buf: Buffer, members: dict[str, Buffer], k: int) -> bool:
    """Every load of an earlier member reads it at (i0, ..., i{k-1}, 0): its own row."""
    body = body_of(buf.op)
    if body is None:
        return False
    rows = {tuple(index_vars(k)) + (sympy.Integer(0),)}
    if tuple(buf.sizes[k:]) == (1,):  # a value per row reads with i{k}, which is 0 here
        rows.add(tuple(index_vars(k + 1)))
    for ld in loads(body):
        if ld.buffer in members and (isinstance(ld, IndirectLoad) or ld.index not in rows):
            return False
    return True


def group_rows(program: Program) -> list[Scheduled]:
    order = program.computed()
    readers: dict[str, set[str]] = {}
    for buf in order:
        for name in reads_of(buf):
            readers.setdefault(name, set()).add(buf.name)
    schedule: list[Scheduled] = []
    held = held_buffers(program)
    t = 0
    while t < len(order):
        with order[t].compiling("grouping"):
            group = _grow(order, t, program.guards)
        if group is None:
            schedule.append(order[t])
            t += 1
            continue
        names = {m.name for m in group.members}
        group.local = {m.name for m in group.members
                       if tuple(m.sizes) == group.outer + (1,) and m.name not in held
                       and readers.get(m.name, set()) <= names}
        schedule.append(group)
        t += len(group.members)
    return schedule


def _grow(order: list[Buffer], t: int, guards: dict) -> RowGroup | None:
    first = _row_reduction(order[t])
    if first is None:
        return None
    outer, row = first
    k = len(outer)
    members = {order[t].name: order[t]}
    for buf in order[t + 1:]:
        if guards.get(buf.name, ()) != guards.get(order[t].name, ()):
            break  # one kernel runs under one set of guards (a branch, a loop)
        shape = _row_reduction(buf)
        per_row = isinstance(buf.op, Pointwise) and tuple(buf.sizes) == outer + (1,)
        if (shape == (outer, row) or per_row) and _reads_rows_only(buf, members, k):
            members[buf.name] = buf  # another reduction, or a value per row (a mean)
            continue
        if (isinstance(buf.op, Pointwise) and tuple(buf.sizes) == outer + (row,)
                and _reads_rows_only(buf, members, k)):
            members[buf.name] = buf
        break
    if len(members) < 2:
        return None
    return RowGroup(outer, row, list(members.values()), set())


__all__ = ["RowGroup", "Scheduled", "group_rows", "kernel_members", "local_buffers"]
