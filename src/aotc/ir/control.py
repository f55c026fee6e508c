"""Control flow in the IR: a buffer computed inside a branch of `torch.cond` carries the
guards under which it runs (outermost first); the run skips its kernel otherwise."""
from __future__ import annotations

from dataclasses import dataclass

import sympy


@dataclass(frozen=True)
class Guard:
    """Runs when `predicate` is `value`: a 0-dim bool buffer (a tensor predicate, read once
    its kernel has run) or a symbolic condition over shape symbols."""

    predicate: str | sympy.Basic
    value: bool


def predicate_buffers(guards: dict[str, tuple[Guard, ...]]) -> set[str]:
    """The buffers whose value some guard reads (they stay materialized and live)."""
    return {g.predicate for gs in guards.values() for g in gs if isinstance(g.predicate, str)}
