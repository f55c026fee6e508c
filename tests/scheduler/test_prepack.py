"""Prepacked weights: which constants the compiler stores in the GEMM's panel layout (only
those that GEMMs alone read as B, alike), for which ISA, and that such models still match
eager PyTorch."""
from __future__ import annotations

import pytest
import torch

import aotc
from aotc.passes.pipeline import compile_program
from aotc.target import target_for
from aotc.target.host import missing_features

V4 = target_for("avx512")
V3 = target_for("avx2")


def _packed(module, *inputs, target=V4, freezing=True, dynamic_shapes=None) -> dict:
    """{constant name: (nr, kc)} of the constants stored packed, and the printed GEMMs."""
    with torch.no_grad():
        ep = torch.export.export(module.eval(), inputs, dynamic_shapes=dynamic_shapes)
    compiled = compile_program(ep, target, build=False, freezing=freezing)
    p = compiled.program
    gemms = [b.op.describe() for b in p.computed() if type(b.op).__name__ == "Gemm"]
    return {c.fqn: (c.packing.nr, c.packing.kc) for c in p.constants if c.packing}, gemms


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(12, 40)
        self.fc2 = torch.nn.Linear(40, 24)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class TiedLm(torch.nn.Module):
    """The embedding table is also the output projection: gathered rows and a GEMM B."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 16)

    def forward(self, ids):
        return self.emb(ids) @ self.emb.weight.t()


class WeightOnTheLeft(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 12))

    def forward(self, x):
        return self.w @ x


class PerBatchWeights(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(3, 12, 7))

    def forward(self, x):
        return torch.bmm(x, self.w)


def test_linear_weights_are_packed_per_isa():
    x = torch.randn(4, 12)
    packed, gemms = _packed(Mlp(), x)
    assert packed == {"fc1.weight": (32, 512), "fc2.weight": (32, 512)}
    assert all("@ packed " in g for g in gemms)
    head = torch.nn.Sequential(torch.nn.Linear(12, 3))  # too narrow: stored as given
    assert _packed(head, x)[0] == {}
    assert _packed(Mlp(), x, target=V3)[0] == {"fc1.weight": (16, 512), "fc2.weight": (16, 512)}
    # unfrozen weights are packed too: packing moves bytes, it folds no value
    assert set(_packed(Mlp(), x, freezing=False)[0]) == {"fc1.weight", "fc2.weight"}


def test_dynamic_rows_keep_packed_weights():
    batch = torch.export.Dim("batch", min=2, max=64)
    packed, _ = _packed(Mlp(), torch.randn(4, 12), dynamic_shapes=({0: batch},))
    assert set(packed) == {"fc1.weight", "fc2.weight"}


@pytest.mark.parametrize("module,inputs", [
    (TiedLm(), (torch.randint(0, 50, (2, 6)),)),  # also read by the gather
    (WeightOnTheLeft(), (torch.randn(12, 5),)),  # A, not B
    (PerBatchWeights(), (torch.randn(3, 4, 12),)),  # one B per matrix of the batch
])
def test_weights_read_otherwise_stay_as_given(module, inputs):
    packed, gemms = _packed(module, *inputs)
    assert packed == {} and gemms and not any("packed" in g for g in gemms)


@pytest.mark.parametrize("isa", ["avx512", "avx2", "sse2"])
@pytest.mark.parametrize("module,inputs", [
    (Mlp(), (torch.randn(7, 12),)),
    (TiedLm(), (torch.randint(0, 50, (2, 6)),)),
    (WeightOnTheLeft(), (torch.randn(12, 5),)),
    (PerBatchWeights(), (torch.randn(3, 4, 12),)),
])
def test_models_match_eager(tmp_path, isa, module, inputs):
    if missing_features(target_for(isa)):
        pytest.skip(f"this CPU cannot run {isa} code")
    torch.manual_seed(0)
    with torch.no_grad():
        ep = torch.export.export(module.eval(), inputs)
    model = aotc.load_package(aotc.compile_and_package(ep, tmp_path / "m.pt2",
                                                       options={"isa": isa}))
    with torch.no_grad():
        torch.testing.assert_close(model(*inputs), ep.module()(*inputs))
