"""GEMM epilogues: a pointwise consumer that alone reads a GEMM's result, element for
element, runs inside the GEMM on each finished tile (Template.with_epilogue); the fused
models match eager PyTorch on every ISA this CPU runs."""
from __future__ import annotations

import pytest
import torch

import aotc
from aotc.passes.pipeline import compile_program
from aotc.target import target_for
from aotc.target.host import missing_features

V4 = target_for("avx512")


def _gemms(module, *inputs, dynamic_shapes=None) -> list[str]:
    with torch.no_grad():
        ep = torch.export.export(module.eval(), inputs, dynamic_shapes=dynamic_shapes)
    program = compile_program(ep, V4, build=False).program
    return [b.op.describe() for b in program.computed() if type(b.op).__name__ == "Gemm"]


class Mlp(torch.nn.Module):
    def __init__(self, act):
        super().__init__()
        self.fc1 = torch.nn.Linear(24, 40)
        self.fc2 = torch.nn.Linear(40, 24)
        self.act = act

    def forward(self, x):
        return x + 0.5 * self.fc2(self.act(self.fc1(x)))


class Products(torch.nn.Module):
    """Both operands are inputs: the unpacked GEMM with an epilogue."""

    def forward(self, a, b):
        return torch.nn.functional.silu(a @ b) * 2.0


class TwoReaders(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(24, 40)

    def forward(self, x):
        y = self.fc(x)
        return torch.relu(y), torch.sigmoid(y)


class Reduced(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(24, 40)

    def forward(self, x):
        return self.fc(x).relu().sum(dim=-1)


ACTS = [torch.nn.ReLU(), torch.nn.GELU(), torch.nn.SiLU(), torch.nn.GELU(approximate="tanh")]


def test_activation_and_residual_run_in_the_gemm():
    gemms = _gemms(Mlp(torch.nn.GELU()), torch.randn(6, 24))
    assert len(gemms) == 2
    assert ", then " in gemms[0] and "erf(" in gemms[0]  # fc1 + GELU
    assert ", then add(in_x[" in gemms[1]  # fc2, the scale and the residual add


def test_epilogues_compose_and_read_inputs_of_any_rank():
    batch = torch.export.Dim("batch", min=1, max=64)
    gemms = _gemms(Mlp(torch.nn.SiLU()), torch.randn(3, 5, 24), dynamic_shapes=({0: batch},))
    assert all(", then " in g for g in gemms)
    (g,) = _gemms(Products(), torch.randn(2, 7, 24), torch.randn(2, 24, 9))
    assert ", then mul(mul(" in g  # silu, then the scale: one epilogue


@pytest.mark.parametrize("module", [TwoReaders(), Reduced()])
def test_results_read_otherwise_stay_stored(module):
    (g,) = _gemms(module, torch.randn(6, 24))
    assert ", then " not in g


CASES = [(Mlp(act), (torch.randn(7, 24),)) for act in ACTS] + [
    (Mlp(torch.nn.ReLU()), (torch.randn(2, 150, 24),)),  # rows across several tiles
    (Products(), (torch.randn(2, 37, 24), torch.randn(2, 24, 45))),
    (TwoReaders(), (torch.randn(6, 24),)),
]


@pytest.mark.parametrize("isa", ["avx512", "avx2", "sse2"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_fused_models_match_eager(tmp_path, isa, case):
    if missing_features(target_for(isa)):
        pytest.skip(f"this CPU cannot run {isa} code")
    torch.manual_seed(case)
    module, inputs = CASES[case]
    with torch.no_grad():
        ep = torch.export.export(module.eval(), inputs)
    model = aotc.load_package(aotc.compile_and_package(ep, tmp_path / "m.pt2",
                                                       options={"isa": isa}))
    with torch.no_grad():
        torch.testing.assert_close(model(*inputs), ep.module()(*inputs))
