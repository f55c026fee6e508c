"""hash_tensor against eager: the xor of each element's bits (widened to float64 or int64)
as uint64, over every dim or the given ones, keepdim or not."""
from __future__ import annotations

import pytest
import torch


class Hash(torch.nn.Module):
    def forward(self, x):
        return (torch.hash_tensor(x), torch.hash_tensor(x, 1),
                torch.hash_tensor(x, (0, 2), keepdim=True))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_hash_tensor_matches_eager(compile_model, dtype):
    g = torch.Generator().manual_seed(0)

    def make():
        x = torch.randn(3, 4, 5, generator=g) * 100
        return x > 0 if dtype is torch.bool else x.to(dtype)

    x = make()
    ep, model = compile_model(Hash(), (x,))
    for _ in range(3):
        for got, want in zip(model(x), ep.module()(x)):
            assert got.dtype == want.dtype == torch.uint64
            assert torch.equal(got, want)
        x = make()


def test_hash_tensor_sees_signs_of_zero_and_nan():
    """-0.0 and 0.0 differ in their bits, and so do their hashes."""
    import aotc

    ep = torch.export.export(Hash(), (torch.zeros(2, 2, 2),))
    model = aotc.load_package(aotc.compile_and_package(ep))
    x = torch.zeros(2, 2, 2)
    x[0, 1, 1] = -0.0
    x[1, 0, 0] = float("nan")
    for got, want in zip(model(x), ep.module()(x)):
        assert got.dtype == want.dtype == torch.uint64
        assert torch.equal(got, want)
    assert model(x)[0] != model(torch.zeros(2, 2, 2))[0]


def test_hash_tensor_runs_without_torch(tmp_path):
    """The uint64 result comes back through the numpy-only runtime too."""
    from numpy_only import run_without_torch

    import aotc

    x = torch.randn(3, 4, 5)
    ep = torch.export.export(Hash(), (x,))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    calls = [[torch.randn(3, 4, 5)] for _ in range(2)]
    got = run_without_torch(path, [[t.numpy() for t in c] for c in calls], tmp_path / "io")
    for outs, c in zip(got, calls):
        for o, want in zip(outs, ep.module()(*c)):
            assert o.dtype.name == "uint64"
            assert torch.equal(torch.from_numpy(o), want)
