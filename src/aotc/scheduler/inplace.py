"""Which updates of a user input run in place, on the caller's storage, with no copy.

An input's final value (Program.updates) is a RegionWrite whose initial value is
the input itself: when no later kernel reads the input and the writes do not read it
either, the writes go straight into the input's memory (a KV cache takes its new row
without a copy of the cache). Any other final value is copied into the input at the end.
"""
from __future__ import annotations

from ..ir.binding import outputs_sized_late
from ..ir.expr import loads
from ..ir.nodes import Buffer, Program
from ..ir.queries import reads_of
from ..ir.regions import RegionWrite
from .grouping import RowGroup, Scheduled


def in_place_updates(program: Program, schedule: list[Scheduled]) -> dict[str, str]:
    """Final buffer -> the input buffer whose storage it is computed in."""
    order = [m for item in schedule
             for m in (item.members if isinstance(item, RowGroup) else [item])]
    out: dict[str, str] = {}
    if outputs_sized_late(program):  # the kernels before the binding also run to size outputs
        return out
    for source, final in program.updates.items():
        buf = program.buffers.get(final)
        if buf is None or final in program.outputs or not _writes_over(buf, source):
            continue
        at = next(k for k, b in enumerate(order) if b.name == final)
        if any(source in reads_of(b) for b in order[at + 1:]):
            continue
        out[final] = source
    return out


def _writes_over(buf: Buffer, source: str) -> bool:
    op = buf.op
    if not isinstance(op, RegionWrite) or op.in_place_source(buf.sizes) != source:
        return False
    return all(ld.buffer != source for w in op.writes for n in w.nodes() for ld in loads(n))


__all__ = ["in_place_updates"]
