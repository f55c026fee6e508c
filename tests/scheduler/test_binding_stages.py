"""Symbols bound during the run on a tiny graph: where each binds, the stage of each arena
slot (never shared across stages), the buffers kept for the binding, and the outputs
computed before the output sizes are known (copied out at the end)."""
from __future__ import annotations

import sympy
import torch

from aotc.frontend.importer import import_program
from aotc.ir.binding import binding_buffers, late_symbols, outputs_sized_late
from aotc.passes.dce import remove_dead_buffers
from aotc.scheduler.binding import binding_steps
from aotc.scheduler.fusion import fuse_pointwise
from aotc.scheduler.grouping import group_rows, kernel_members, local_buffers
from aotc.scheduler.memory import plan_memory


class TwoSelections(torch.nn.Module):
    def forward(self, x):
        s = x.sum(1)
        y = x[s > 0]
        z = y[y.sum(1) > 1]
        return s, z + 1


def _planned():
    ep = torch.export.export(TwoSelections(), (torch.randn(7, 3),))
    program = fuse_pointwise(remove_dead_buffers(import_program(ep)))
    schedule = group_rows(program)
    steps = kernel_members(schedule)
    return program, steps, plan_memory(program, steps, local_buffers(schedule))


def test_each_count_binds_after_its_mask_and_sizes_a_stage():
    program, steps, plan = _planned()
    late = late_symbols(program)
    u0, u1 = sorted(late, key=lambda s: s.name)
    assert outputs_sized_late(program)
    bindings = binding_steps(program, steps)
    assert bindings == plan.bindings and bindings[u0] < bindings[u1]
    names = [[b.name for b in members] for members in steps]
    for s, reads in late.items():  # each binds right after the last kernel it reads
        assert max(t for t, n in enumerate(names) for r in reads if r in n) == bindings[s]
    assert binding_buffers(program) <= {b for n in names for b in n}
    for k, size in enumerate(plan.slots):
        symbols = sympy.sympify(size).free_symbols
        assert plan.stage[k] == (2 if u1 in symbols else 1 if u0 in symbols else 0)
    for name, slot in plan.slot_of.items():  # a slot holds buffers of its own stage only
        size_symbols = set().union(*(sympy.sympify(d).free_symbols
                                     for d in program.buffers[name].sizes))
        stage = 2 if u1 in size_symbols else 1 if u0 in size_symbols else 0
        assert plan.stage[slot] == stage, name
    # s is an output computed before u1 binds: it lives in the arena and is copied out
    assert plan.copied_outputs and all(n in plan.slot_of for n in plan.copied_outputs)
