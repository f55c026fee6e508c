"""What every generated-kernel emitter is given besides the buffer: one frozen record, so a
new fact about the model reaches the emitters without changing their signatures."""
from __future__ import annotations

from dataclasses import dataclass

from ...scheduler.loops import Nest


@dataclass(frozen=True)
class EmitContext:
    nests: dict[str, Nest]  # each generated kernel's loop nest (scheduler/loops.py)
    in_place: frozenset[str]  # buffers updated in their input's or state's own storage
