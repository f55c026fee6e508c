"""The call into the shipped scans (kernels/scan.cpp): an inclusive scan, or the positions
of the running max or min, along the middle of [outer, length, inner]."""
from __future__ import annotations

from ....ir.nodes import Buffer, Scan
from ..exprs import c_index
from . import emits


@emits(Scan)
def scan_call(buf: Buffer, pointer_of, workspace: str | None) -> list[str]:
    """The call into the shipped scans (overloaded by element type in aotc_kernels.h)."""
    op = buf.op
    assert isinstance(op, Scan)
    fn = "aotc::scan_positions" if op.positions else "aotc::scan"
    return [f"{fn}(AOTC_SCAN_{op.op.name}, {c_index(op.outer)}, {c_index(op.length)}, "
            f"{c_index(op.inner)}, {pointer_of(op.x)}, {pointer_of(buf.name)});"]
