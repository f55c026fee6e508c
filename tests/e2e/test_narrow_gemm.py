"""Models whose GEMMs have few columns and a short K (the kernel's dot-product and
register-strip paths), compiled for each x86 ISA build, against eager PyTorch."""
from __future__ import annotations

import pytest
import torch

import aotc
from aotc.target import target_for
from aotc.target.host import missing_features
from models import ReadmeModel


class Head(torch.nn.Module):
    """Linear(k, 1): one output column, a transposed [1, k] weight."""

    def __init__(self, k: int):
        super().__init__()
        self.fc = torch.nn.Linear(k, 1)

    def forward(self, x):
        return torch.sigmoid(self.fc(x))


class NarrowMlp(torch.nn.Module):
    """Linear(k, 3) -> GELU -> Linear(3, 7): 3 and 7 columns, K of 3 after the first."""

    def __init__(self, k: int):
        super().__init__()
        self.fc1 = torch.nn.Linear(k, 3)
        self.fc2 = torch.nn.Linear(3, 7)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


@pytest.mark.parametrize("isa", ["avx512", "avx2"])
@pytest.mark.parametrize("module,rows,k", [
    (ReadmeModel(), 256, 10),
    (Head(33), 257, 33),
    (Head(600), 31, 600),
    (NarrowMlp(16), 256, 16),
])
def test_narrow_models_match_eager(tmp_path, isa, module, rows, k):
    if missing_features(target_for(isa)):
        pytest.skip(f"this CPU cannot run {isa} code")
    torch.manual_seed(rows + k)
    x = torch.randn(rows, k)
    with torch.no_grad():
        ep = torch.export.export(module.eval(), (x,))
        model = aotc.load_package(aotc.compile_and_package(ep, tmp_path / "m.pt2",
                                                           options={"isa": isa}))
        for inputs in (x, torch.randn(rows, k) * 3):
            torch.testing.assert_close(model(inputs), ep.module()(inputs))
