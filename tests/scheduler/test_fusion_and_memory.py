"""Fusion decisions and memory plans on tiny graphs, as printed IR (Before/Expected)."""
from __future__ import annotations

import pytest
import sympy
import torch

from aotc.frontend.importer import import_program
from aotc.ir.printer import format_program
from aotc.ir.queries import reads_of
from aotc.passes.dce import remove_dead_buffers
from aotc.passes.pipeline import _schedule_dump
from aotc.scheduler.fusion import fuse_pointwise
from aotc.scheduler.grouping import group_rows, kernel_members, local_buffers
from aotc.scheduler.memory import plan_memory


class Chain(torch.nn.Module):
    def forward(self, x):
        y = torch.relu(x + 1) * 2
        return y.sum(-1), torch.exp(y)


def lowered(module, *args, **kw):
    ep = torch.export.export(module, args, **kw)
    return remove_dead_buffers(import_program(ep))


def test_pointwise_chain_before_fusion():
    p = lowered(Chain(), torch.randn(3, 4))
    assert format_program(p) == (
        "in_x: float32[3, 4] = input\n"
        "add: float32[3, 4] = pointwise add(in_x[i0, i1], 1.0:float32)\n"
        "relu: float32[3, 4] = pointwise maximum(add[i0, i1], 0.0:float32)\n"
        "mul: float32[3, 4] = pointwise mul(relu[i0, i1], 2.0:float32)\n"
        "sum_1: float32[3] = sum over (4) of mul[i0, r0]\n"
        "exp: float32[3, 4] = pointwise exp(mul[i0, i1])\n"
        "outputs: sum_1, exp\n")


def test_single_use_chain_fuses_multi_use_stays():
    p = fuse_pointwise(lowered(Chain(), torch.randn(3, 4)))
    # add and relu each have one reader: inlined; mul has two readers: materialized
    assert format_program(p) == (
        "in_x: float32[3, 4] = input\n"
        "mul: float32[3, 4] = pointwise mul(maximum(add(in_x[i0, i1], 1.0:float32), "
        "0.0:float32), 2.0:float32)\n"
        "sum_1: float32[3] = sum over (4) of mul[i0, r0]\n"
        "exp: float32[3, 4] = pointwise exp(mul[i0, i1])\n"
        "outputs: sum_1, exp\n")
    assert p.buffers["mul"].origin.targets == ("aten.add.Tensor", "aten.relu.default",
                                               "aten.mul.Tensor")


class Views(torch.nn.Module):
    def forward(self, x):
        return (x.view(2, 3, 4).permute(2, 0, 1).reshape(4, 6)[1:, ::2] + 1).t()


def test_views_fold_into_one_load():
    p = fuse_pointwise(lowered(Views(), torch.randn(6, 4)))
    # out[a, b] = x.view(2,3,4).permute(2,0,1).reshape(4,6)[1 + b, 2a] + 1 = x[2a, b + 1] + 1:
    # the index arithmetic simplifies away and the add fuses into the output copy
    assert format_program(p).splitlines()[1:] == [
        "out_0: float32[3, 3] = pointwise add(in_x[2*i0, i1 + 1], 1.0:float32)",
        "outputs: out_0"]


class Seq(torch.nn.Module):
    def forward(self, x):
        a = torch.tanh(x @ x.t())
        b = a.softmax(-1)
        return (b @ a).sum(0)


def test_memory_plan_reuses_slots_with_symbolic_sizes():
    n = torch.export.Dim("n", min=2, max=64)
    p = fuse_pointwise(lowered(Seq(), torch.randn(8, 8), dynamic_shapes={"x": {0: n}}))
    plan = plan_memory(p)
    intermediates = [b.name for b in p.computed() if b.name not in p.outputs]
    assert set(plan.slot_of) == set(intermediates)
    (s,) = p.symbols
    assert len(plan.slots) < len(intermediates)  # something was reused
    assert all(sympy.sympify(size).free_symbols <= {s} for size in plan.slots)


class RowOps(torch.nn.Module):
    def forward(self, x):
        y = torch.softmax(x, -1)
        m = x.mean(-1, keepdim=True)
        return y, x - m, m


def test_row_groups_keep_reductions_in_registers():
    p = fuse_pointwise(lowered(RowOps(), torch.randn(3, 4)))
    schedule = group_rows(p)
    # softmax: max and sum live in registers; the mean is an output, so it is also stored
    assert _schedule_dump(schedule) == (
        "kernel 0: rows of [3] x 4: softmax_max (local), softmax_sum (local), softmax\n"
        "kernel 1: rows of [3] x 4: mean_sum (local), mean, sub\n")
    plan = plan_memory(p, kernel_members(schedule), local_buffers(schedule))
    assert local_buffers(schedule) == {"softmax_max", "softmax_sum", "mean_sum"}
    assert not set(plan.slot_of) & {"softmax_max", "softmax_sum", "mean_sum"}


def shared_slots_within_kernels(program, schedule, plan) -> list[tuple[str, str]]:
    """Pairs of buffers that one kernel reads or writes and that the plan put in one slot."""
    clashes = []
    for members in kernel_members(schedule):
        touched = sorted({m.name for m in members} | {r for m in members for r in reads_of(m)})
        in_arena = [b for b in touched if b in plan.slot_of]
        clashes += [(a, b) for i, a in enumerate(in_arena) for b in in_arena[i + 1:]
                    if plan.slot_of[a] == plan.slot_of[b]]
    return clashes


class TwoRowSums(torch.nn.Module):
    """A row group whose first reduction reads a buffer nothing reads later (matmul), and
    whose second reduction (sum_2) is also read after the group, so it needs a slot."""

    def __init__(self):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.randn(8, 8))
        self.w2 = torch.nn.Parameter(torch.randn(8, 8))

    def forward(self, x):
        a, b = x @ self.w1, x @ self.w2
        r1, r2 = a.sum(-1, keepdim=True), b.sum(-1, keepdim=True)
        return b * r1 * r2, r2 * 2


def test_row_group_is_one_step_of_the_memory_plan():
    p = fuse_pointwise(lowered(TwoRowSums(), torch.randn(64, 8)))
    schedule = group_rows(p)
    assert _schedule_dump(schedule).splitlines()[2] == (
        "kernel 2: rows of [64] x 8: sum_1 (local), sum_2, mul_1")
    plan = plan_memory(p, kernel_members(schedule), local_buffers(schedule))
    # matmul is read by the group's first member: sum_2, written in the same loop, may not
    # take its slot (counted per buffer, matmul looked dead by the time sum_2 was planned)
    assert plan.slot_of["sum_2"] != plan.slot_of["matmul"]
    assert shared_slots_within_kernels(p, schedule, plan) == []


@pytest.mark.parametrize("module, shape", [(TwoRowSums(), (64, 8)), (RowOps(), (3, 4)),
                                           (Seq(), (8, 8)), (Chain(), (3, 4))])
def test_no_kernel_touches_two_buffers_of_one_slot(module, shape):
    p = fuse_pointwise(lowered(module, torch.randn(*shape)))
    schedule = group_rows(p)
    plan = plan_memory(p, kernel_members(schedule), local_buffers(schedule))
    assert shared_slots_within_kernels(p, schedule, plan) == []


class TwoUpdates(torch.nn.Module):
    """Two buffers updated early; their final values are copied into the state at the end."""

    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))
        self.register_buffer("total", torch.zeros(3))

    def forward(self, x):
        self.count.add_(1)
        self.total.mul_(0.5).add_(x.mean(0))
        return (x - x.mean(0)).var(0) * 2


def test_updated_values_keep_their_slots_to_the_end():
    p = fuse_pointwise(lowered(TwoUpdates(), torch.randn(4, 3)))
    groups = group_rows(p)
    plan = plan_memory(p, kernel_members(groups), local_buffers(groups))
    finals = set(p.updates.values())
    assert finals
    for final in finals:  # no later buffer may take the slot of a value copied at the end
        if final in plan.slot_of:
            sharing = [b.name for b in p.computed() if b.name != final
                       and plan.slot_of.get(b.name) == plan.slot_of[final]]
            order = [b.name for b in p.computed()]
            assert all(order.index(b) < order.index(final) for b in sharing), sharing
