"""Data-dependent sizes: nonzero, argwhere, boolean-mask indexing and masked_select come
back at their true size (several fill ratios, all-false included), downstream ops see
that size; OpInfo's samples; from a numpy-only process; creation ops, repeat, expand and views
sized by expressions mixing shape symbols and .item() values."""
from __future__ import annotations

import pytest
import torch
from numpy_only import run_without_torch
from torch.export import Dim
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


# ---- creation ops and views sized by expressions mixing shape symbols and .item() values --

def _mixed_sizes(z, s):
    """k = s.item() in [1, 8] (bound with the inputs), j a .item() of a reduction (bound
    during the run) and m = z.size(0) + k, which mixes a shape symbol with k."""
    k = s.item()
    torch._check(k >= 1)
    torch._check(k <= 8)
    return k, (z > 0).sum().item(), z.size(0) + k


class Creations(torch.nn.Module):
    """Sizes, starts and steps that mix z's shape symbol with k = s.item() (bound with the
    inputs) and j, a .item() of a reduction (bound during the run)."""

    def forward(self, x, z, s):
        k, j, m = _mixed_sizes(z, s)
        return (torch.zeros(m, 3) + x.sum(), torch.ones(2, m * 2), torch.full((m, k), 3.0),
                x.new_zeros(m, z.size(0)), x.new_ones((k, m)), x.new_full((m,), 7.0),
                torch.arange(m) * 2, torch.arange(k, m + k, 2), torch.arange(j, j + m),
                torch.zeros(j + z.size(0), k))


class Reshapes(torch.nn.Module):
    """repeat, expand and view/reshape to such sizes; tile, narrow_copy and tril, whose
    decompositions take them as arguments."""

    def forward(self, x, z, s):
        k, j, m = _mixed_sizes(z, s)
        return (x.repeat(m, 1), x.repeat(z.size(0), 2), x.repeat(m, 1).reshape(m, 6),
                x[:1].expand(m, 3) + 1, z[:, None].expand(z.size(0), k) * 2,
                torch.arange(m * 6).view(m, 2, 3), torch.ones(m * 3, 2).view(m, -1),
                x.repeat(j + k, 1).sum(0), x.repeat(j + z.size(0), 1), torch.tile(x, (m, 1)),
                torch.narrow_copy(x.repeat(m, 1), 0, k, z.size(0)),
                torch.tril(x.repeat(m, m), k - z.size(0)))


class Empties(torch.nn.Module):
    """empty, empty_strided and new_empty_strided filled before they are read."""

    def forward(self, x, z, s):
        k, j, m = _mixed_sizes(z, s)
        return (torch.empty_strided((10, k, 32), (k * 32, 32, 1)).fill_(1.0) * 2,
                torch.empty_strided((2, m, 3), (3 * m, 3, 1)).fill_(1.5),
                torch.empty(m, 3).fill_(2.0) + x.sum(),
                x.new_empty_strided((m, 3), (3, 1)).copy_(x.repeat(m, 1)[:m] * 2),
                torch.empty_strided((j + z.size(0), 2), (2, 1)).fill_(3.0) * z.sum())


def _sized_inputs(n: int, k: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(2, 3, generator=g), torch.randn(n, generator=g), torch.tensor(k)


def _export_sized(module):
    return torch.export.export(module, _sized_inputs(3, 2, 0),
                               dynamic_shapes=(None, {0: Dim("z", min=1, max=10)}, None))


@pytest.mark.parametrize("module", [Creations, Reshapes, Empties], ids=lambda m: m.__name__)
def test_sizes_mixing_shape_symbols_and_item_values(module, tmp_path):
    ep = _export_sized(module())
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2"))
    for seed, (n, k) in enumerate(((3, 2), (5, 4), (1, 1), (10, 8), (7, 3))):
        args = _sized_inputs(n, k, seed)
        got, want = model(*args), ep.module()(*args)
        torch.testing.assert_close(got, want)  # what each empty was written with, too
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.stride() == w.stride() and g.dtype == w.dtype
