"""Data-dependent sizes: nonzero, argwhere, boolean-mask indexing and masked_select come
back at their true size (several fill ratios, all-false included), downstream ops see
that size; OpInfo's samples; and from a numpy-only process."""
from __future__ import annotations

import pytest
import torch
from numpy_only import run_without_torch
from torch.testing._internal.common_methods_invocations import op_db  # needs expecttest

import aotc
from aotc.tools.opsweep import F32, check, exportable, inputs_of, opinfo_name, pick_samples

SWEPT = ("nonzero", "masked_select", "argwhere")
OPINFOS = {opinfo_name(o): o for o in op_db if opinfo_name(o) in SWEPT}


@pytest.mark.parametrize("name", SWEPT)
def test_opinfo_samples(name, tmp_path):
    """Each sample exported alone: the count's range is then the sample's own."""
    info = OPINFOS[name]
    checked = 0
    for s in pick_samples(info, F32):
        samples, ep = exportable(info, [s])
        if not samples:
            continue
        try:  # export bounds masked_select's count by x's numel, not the broadcast one's,
            ep.module()(*inputs_of(samples))  # so its own assertion can fail in eager
        except RuntimeError as e:
            assert "Runtime assertion failed" in str(e)
            continue
        check(info, samples, ep, tmp_path / str(s.index))
        checked += 1
    assert checked >= 3, f"only {checked} samples of {name} export"


class Selections(torch.nn.Module):
    def forward(self, x, mask):
        rows = x[mask]  # a mask over the leading dim: whole rows
        return (torch.nonzero(x > 0), x[x > 0.5], torch.masked_select(x, x < 0),
                rows * 2 + 1, rows.sum(0), torch.argwhere(mask))


def _inputs(fill: float, seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(6, 5, generator=g) - (1.0 - fill)  # about `fill` of it positive
    mask = torch.rand(6, generator=g) < fill
    return x, mask


def test_selections_at_several_fill_ratios(tmp_path):
    ep = torch.export.export(Selections(), _inputs(0.5, 0))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    model = aotc.load_package(path)
    for seed, fill in enumerate((0.0, 0.1, 0.5, 0.9, 1.0)):
        x, mask = _inputs(fill, seed)
        got, want = model(x, mask), ep.module()(x, mask)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)
        if fill == 0.0:
            assert got[0].shape == (0, 2) and got[3].shape == (0, 5)
    calls = [[t.numpy() for t in _inputs(fill, 7)] for fill in (0.0, 0.6)]
    for outs, args in zip(run_without_torch(path, calls, tmp_path / "io"), calls):
        want = ep.module()(*(torch.from_numpy(a) for a in args))
        for o, w in zip(outs, want):
            torch.testing.assert_close(torch.from_numpy(o), w)
