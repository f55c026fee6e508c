"""Golden generated C++ for small models: a refactor's diff is empty or reviewed.

Regenerate with AOTC_UPDATE_GOLDEN=1 after a deliberate codegen change, and review the diff.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from aotc.passes.pipeline import compile_program
from aotc.target import target_for
from models import ReadmeModel

GOLDEN = Path(__file__).parent / "golden"


class SoftmaxNorm(torch.nn.Module):
    def forward(self, x):
        y = torch.softmax(x * 0.5, dim=-1)
        return y - y.mean(dim=-1, keepdim=True)


# one fixed ISA build, whatever the host: the files are source, only printed, never run here
GOLDEN_TARGET = target_for("avx512")


def _emit(module, args, dynamic_shapes=None, target=GOLDEN_TARGET) -> str:
    ep = torch.export.export(module, args, dynamic_shapes=dynamic_shapes)
    return compile_program(ep, target, header="golden", build=False).source


CASES = {
    "readme_model.cpp": lambda: _emit(ReadmeModel(), (torch.randn(8, 10),),
                                      {"x": {0: torch.export.Dim("batch", min=1, max=1024)}}),
    "softmax_norm.cpp": lambda: _emit(SoftmaxNorm(), (torch.randn(4, 6),)),
    # the aarch64 baseline (options={"target": "aarch64"})
    "readme_model_neon.cpp": lambda: _emit(ReadmeModel(), (torch.randn(8, 10),),
                                           {"x": {0: torch.export.Dim("batch", min=1, max=1024)}},
                                           target_for("neon")),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_cpp_matches_golden(name):
    source = CASES[name]()
    path = GOLDEN / name
    if os.environ.get("AOTC_UPDATE_GOLDEN"):
        path.write_text(source)
    assert path.exists(), f"missing golden file {path}; run with AOTC_UPDATE_GOLDEN=1"
    assert source == path.read_text(), f"generated C++ for {name} changed; review the diff"
