"""The program stages (dce, fuse, prepack) return new programs: each stage's input prints
the same after the later stages ran, so every stage's dump stays what that stage made."""
from __future__ import annotations

import torch

from aotc.frontend.importer import import_program
from aotc.ir.printer import format_program
from aotc.passes.dce import remove_dead_buffers
from aotc.scheduler.fusion import fuse_pointwise
from aotc.scheduler.prepack import prepack_weights
from aotc.target import target_for


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 32)

    def forward(self, x):
        unused = torch.exp(x)  # noqa: F841 (dead: dce drops it)
        return torch.relu(self.fc(x) + 1) * 2


def test_stages_leave_their_input_as_it_was():
    with torch.no_grad():
        ep = torch.export.export(Mlp().eval(), (torch.randn(4, 16),))
    imported = import_program(ep)
    printed = [format_program(imported)]
    dced = remove_dead_buffers(imported)
    printed.append(format_program(dced))
    fused = fuse_pointwise(dced)
    printed.append(format_program(fused))
    packed = prepack_weights(fused, target_for("avx512"))
    assert [c.packing is not None for c in packed.constants] == [True, False]
    assert len({format_program(p) for p in (imported, dced, fused, packed)}) == 4
    assert [format_program(p) for p in (imported, dced, fused)] == printed
    assert all(c.packing is None for c in fused.constants)
