"""What every generated-kernel emitter is given besides the buffer: one frozen record, so a
new fact about the model reaches the emitters without changing their signatures."""
from __future__ import annotations

from dataclasses import dataclass

from ...target import Target


@dataclass(frozen=True)
class EmitContext:
    target: Target  # the machine the loops are blocked for (`target.loops`)
    in_place: frozenset[str]  # buffers updated in their input's or state's own storage
