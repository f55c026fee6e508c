"""Control flow in the IR: a buffer computed inside a branch of `torch.cond` carries the
guards under which it runs (outermost first); the run skips its kernel otherwise. A
buffer computed inside a `torch.while_loop` carries the loop's guard: its kernel runs in
the loop, once per iteration, and the loop stops when the predicate is false."""
from __future__ import annotations

from dataclasses import dataclass

import sympy


@dataclass(frozen=True)
class Guard:
    """Runs when `predicate` is `value`: a 0-dim bool buffer (a tensor predicate, read once
    its kernel has run) or a symbolic condition over shape symbols."""

    predicate: str | sympy.Basic
    value: bool
    loop: bool = False  # the guard of a while_loop's cond and body (not a branch)


@dataclass(frozen=True)
class Loop:
    """A while_loop: while `predicate` (a 0-dim bool buffer computed in the loop from the
    carries) holds, run the loop's kernels, then copy each `nexts[k]` into `carries[k]`.
    The carries are computed before the loop (their initial values) and hold the results
    after it."""

    predicate: str
    carries: tuple[str, ...]
    nexts: tuple[str, ...]

    def buffers(self) -> set[str]:
        return {self.predicate, *self.carries, *self.nexts}


def loop_buffers(loops) -> set[str]:
    """Buffers a loop reads or writes outside any kernel: they stay materialized."""
    return {b for loop in loops for b in loop.buffers()}


def predicate_buffers(guards: dict[str, tuple[Guard, ...]]) -> set[str]:
    """The buffers whose value some guard reads (they stay materialized and live)."""
    return {g.predicate for gs in guards.values() for g in gs if isinstance(g.predicate, str)}
