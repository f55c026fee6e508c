"""Models whose GEMMs have a small output and a long K (a classifier head over flattened
features, a reduction-like matmul of two inputs), compiled for each x86 ISA build and run
with two threads, which split K between them, against eager PyTorch."""
from __future__ import annotations

import pytest
import torch

import aotc
from aotc.target import target_for
from aotc.target.host import missing_features


class SkinnyHeads(torch.nn.Module):
    """Linear(25088, 10) over flattened 512x7x7 features (a prepacked weight), then GELU;
    and x @ y of two inputs, [8, 16384] by [16384, 16] (B read unpacked), then an epilogue."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(512 * 7 * 7, 10)

    def forward(self, feats, x, y):
        head = torch.nn.functional.gelu(self.fc(feats.flatten(1)))
        return head, torch.relu(x @ y) * 0.5 + 1.0


@pytest.mark.parametrize("isa", ["avx512", "avx2"])
def test_split_k_models_match_eager(tmp_path, isa):
    if missing_features(target_for(isa)):
        pytest.skip(f"this CPU cannot run {isa} code")
    torch.manual_seed(0)
    module = SkinnyHeads()
    inputs = (torch.randn(4, 512, 7, 7), torch.randn(8, 16384), torch.randn(16384, 16))
    with torch.no_grad():
        ep = torch.export.export(module.eval(), inputs)
        path = aotc.compile_and_package(ep, tmp_path / "m.pt2", options={"isa": isa})
        two = aotc.load_package(path, num_threads=2)
        one = aotc.load_package(path, num_threads=1)
        # sums of 16384 and 25088 products of unit normals (about 100 in size) summed in
        # another order than eager's: float32 rounding of some 1e-5 of that size
        tol = {"rtol": 1e-4, "atol": 1e-3}
        for args in (inputs, tuple(torch.randn_like(t) for t in inputs)):
            expected = ep.module()(*args)
            got = two(*args)
            torch.testing.assert_close(got, expected, **tol)
            again = two(*args)  # the reduction order is fixed: the same bits every call
            for a, b in zip(got, again):
                torch.testing.assert_close(a, b, rtol=0, atol=0)
            torch.testing.assert_close(one(*args), expected, **tol)
