"""The memory plan: every intermediate buffer gets a slot in one arena.

Liveness is counted in kernels, not buffers: a kernel that computes several buffers (a
row group runs its members row by row in one parallel loop) is one step, so nothing it
reads or writes shares a slot with anything else it touches.

Sizes are symbolic, so slots are too: a buffer reuses a free slot (the slot grows to
the larger of the two where needed), and the generated code evaluates slot sizes and
offsets from the bound shape symbols at run time. Inputs, constants and outputs live
outside the arena.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import sympy

from ..ir.binding import late_symbols, outputs_sized_late
from ..ir.nodes import Buffer, Program, Template
from ..ir.queries import reads_of
from ..ir.symbols import numel, surely_at_least
from .binding import binding_steps, stage_of, stage_of_symbols


@dataclass
class MemoryPlan:
    slots: list[sympy.Expr] = field(default_factory=list)  # bytes each (before 64-alignment)
    slot_of: dict[str, int] = field(default_factory=dict)  # buffer -> slot
    # template buffer -> the slot of the scratch its kernel uses while it runs
    workspace_of: dict[str, int] = field(default_factory=dict)
    # per slot: the stage whose start sizes it (0: before the run; k: after the k-th
    # binding point of symbols bound during the run, scheduler/binding.py)
    stage: list[int] = field(default_factory=list)
    # outputs computed before a binding point that output sizes need: computed into the
    # arena and copied out at the end (the kernels before that point also run to size them)
    copied_outputs: list[str] = field(default_factory=list)
    # symbol bound during the run -> the kernel step after which it binds
    bindings: dict[sympy.Symbol, int] = field(default_factory=dict)


def nbytes(buf: Buffer) -> sympy.Expr:
    return sympy.expand(numel(buf.sizes) * buf.dtype.itemsize)


def plan_memory(program: Program, kernels: Sequence[Sequence[Buffer]] | None = None,
                local: frozenset[str] = frozenset()) -> MemoryPlan:
    """Arena slots for intermediates. `kernels` is the kernel sequence, each the buffers one
    kernel computes (default: one kernel per computed buffer); `local` buffers live in
    registers and get none. Whatever a while_loop's kernels touch lives until its last
    kernel (the next iteration reads it again)."""
    steps = [[b] for b in program.computed()] if kernels is None else kernels
    last_use: dict[str, int] = {}
    for t, members in enumerate(steps):
        for buf in members:
            for name in reads_of(buf):
                last_use[name] = t
    for first, last in loop_spans(program, steps):
        for t in range(first, last + 1):
            for buf in steps[t]:
                for name in reads_of(buf) | {buf.name}:
                    last_use[name] = max(last_use.get(name, last), last)
    for loop in program.loops:  # carries are read after the loop, nexts copied at its end
        for name in loop.buffers():
            last_use[name] = max(last_use.get(name, 0), _last_step(program, steps, loop))
    bindings = binding_steps(program, steps)
    stages = stage_of_symbols(bindings)
    for s, reads in late_symbols(program).items():  # read when the symbol binds
        for name in reads:
            last_use[name] = max(last_use.get(name, 0), bindings[s])
    for name in program.updates.values():  # copied into its input or state at the run's end
        last_use[name] = len(steps)
    plan = MemoryPlan(bindings=bindings)
    outputs = set(program.outputs)
    if outputs_sized_late(program):
        last = max(bindings.values())
        plan.copied_outputs = [b.name for members in steps[:last + 1] for b in members
                               if b.name in outputs]
        outputs -= set(plan.copied_outputs)
        for name in plan.copied_outputs:
            last_use[name] = len(steps)
    free: list[int] = []
    live: dict[str, int] = {}
    for t, members in enumerate(steps):
        # a slot frees only once every kernel that reads its buffer has run
        for name in [n for n in live if last_use.get(n, -1) < t]:
            free.append(live.pop(name))
        for buf in members:
            scratch = buf.op.workspace() if isinstance(buf.op, Template) else 0
            if scratch != 0:  # a template's scratch: live while its kernel runs, free after
                slot = _take(plan, free, sympy.expand(scratch), stage_of(scratch, stages))
                plan.workspace_of[buf.name] = live[f"{buf.name}/workspace"] = slot
            if buf.name in outputs or buf.name in local:
                continue
            need = nbytes(buf)
            plan.slot_of[buf.name] = live[buf.name] = _take(plan, free, need,
                                                            stage_of(need, stages))
    return plan


def loop_spans(program: Program, steps) -> list[tuple[int, int]]:
    """(first, last) kernel index of each while_loop, outermost loops included."""
    spans: dict = {}
    for t, members in enumerate(steps):
        for g in {g for m in members for g in program.guards.get(m.name, ()) if g.loop}:
            first, _ = spans.get(g.predicate, (t, t))
            spans[g.predicate] = (first, t)
    return list(spans.values())


def _last_step(program: Program, steps, loop) -> int:
    span = [t for t, members in enumerate(steps)
            if any(g.loop and g.predicate == loop.predicate
                   for m in members for g in program.guards.get(m.name, ()))]
    return span[-1] if span else 0


def _take(plan: MemoryPlan, free: list[int], need: sympy.Expr, stage: int = 0) -> int:
    """A free slot of the same stage for `need` bytes (grown where needed), else a new one."""
    slot = _pick(plan.slots, [s for s in free if plan.stage[s] == stage], need)
    if slot is None:
        plan.slots.append(need)
        plan.stage.append(stage)
        return len(plan.slots) - 1
    free.remove(slot)
    if not surely_at_least(plan.slots[slot], need):
        # unevaluated: sympy's own Max compares every pair of arguments, seconds for the
        # slot sizes of a model with dynamic image sizes
        old = plan.slots[slot]
        parts = old.args if isinstance(old, sympy.Max) else (old,)
        numbers = all(sympy.sympify(a).is_number for a in (*parts, need))
        plan.slots[slot] = sympy.Max(*parts, need, evaluate=numbers)
    return slot


def _pick(slots: list[sympy.Expr], free: list[int], need: sympy.Expr) -> int | None:
    """An exact fit, else a slot surely large enough, else any free slot (it grows)."""
    for s in free:
        if sympy.expand(slots[s] - need) == 0:
            return s
    for s in free:
        if surely_at_least(slots[s], need):
            return s
    return free[0] if free else None
