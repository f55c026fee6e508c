"""`x[mask] = values` with one row of values per selected position (index_put with a
boolean mask) and masked_scatter: the k-th selected position takes row k. Compared with
ep.module() at several fill ratios, a wrong count is an input error, and from a numpy-only
process."""
from __future__ import annotations

import pytest
import torch
from numpy_only import run_without_torch
from torch.testing._internal.common_methods_invocations import op_db  # needs expecttest

import aotc
from aotc.tools.opsweep import F32, check, exportable, opinfo_name, pick_samples


class PutRows(torch.nn.Module):
    def forward(self, x, mask, values):
        y = x * 2
        y[mask] = values
        return y + 1


class AddRows(torch.nn.Module):
    def forward(self, x, mask, values):
        return x.index_put((mask,), values, accumulate=True)


class PutOneRow(torch.nn.Module):
    def forward(self, x, mask, row):
        y = x.clone()
        y[mask] = row  # the same row at every selected position
        return y


class Scatter(torch.nn.Module):
    def forward(self, x, mask, source):
        return x.masked_scatter(mask, source)


def _rows(selected: int, seed: int, rows: int = 6, width: int = 4, values_rows=None):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, width, generator=g)
    mask = torch.zeros(rows, dtype=torch.bool)
    mask[torch.randperm(rows, generator=g)[:selected]] = True
    values = torch.randn(selected if values_rows is None else values_rows, width, generator=g)
    return x, mask, values


@pytest.mark.parametrize("module", [PutRows, AddRows])
def test_one_row_per_selected_position(module, tmp_path):
    ep = torch.export.export(module(), _rows(3, 0))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    model = aotc.load_package(path)
    for seed in range(4):  # the values' row count is static: the same count, other positions
        args = _rows(3, seed)
        torch.testing.assert_close(model(*args), ep.module()(*args))
    with pytest.raises(aotc.InputError, match="mask selects a number of positions other than"):
        model(*_rows(4, 0, values_rows=3))
    calls = [[t.numpy() for t in _rows(3, seed)] for seed in (5, 6)]
    for outs, args in zip(run_without_torch(path, calls, tmp_path / "io"), calls):
        want = ep.module()(*(torch.from_numpy(a) for a in args))
        torch.testing.assert_close(torch.from_numpy(outs[0]), want)


def test_same_row_everywhere(tmp_path):
    x, mask, _ = _rows(2, 0)
    ep = torch.export.export(PutOneRow(), (x, mask, torch.randn(4)))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2"))
    for selected in (0, 2, 6):
        x, mask, _ = _rows(selected, selected)
        row = torch.randn(4)
        torch.testing.assert_close(model(x, mask, row), ep.module()(x, mask, row))


def test_masked_scatter_at_several_fill_ratios(tmp_path):
    g = torch.Generator().manual_seed(0)

    def args(columns):  # the mask broadcasts over the 4 rows; the source has 14 elements
        mask = torch.zeros(5, dtype=torch.bool)
        mask[list(columns)] = True
        return torch.randn(4, 5, generator=g), mask, torch.randn(2, 7, generator=g)

    ep = torch.export.export(Scatter(), args((1, 3)))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    model = aotc.load_package(path)
    for columns in ((), (0,), (1, 4), (0, 2, 3)):
        a = args(columns)
        torch.testing.assert_close(model(*a), ep.module()(*a))
    with pytest.raises(aotc.InputError, match="more positions than the source has elements"):
        model(*args(range(5)))  # 20 positions, 14 elements
    calls = [[t.numpy() for t in args(c)] for c in ((), (2, 4))]
    for outs, a in zip(run_without_torch(path, calls, tmp_path / "io"), calls):
        want = ep.module()(*(torch.from_numpy(t) for t in a))
        torch.testing.assert_close(torch.from_numpy(outs[0]), want)


def test_opinfo_samples(tmp_path):
    """PyTorch's own samples of masked_scatter (masks that broadcast x too), each alone."""
    info = next(o for o in op_db if opinfo_name(o) == "masked_scatter")
    checked = 0
    for dtype in (F32, torch.int64):
        for s in pick_samples(info, dtype):
            samples, ep = exportable(info, [s])
            if samples:
                check(info, samples, ep, tmp_path / f"{dtype}-{s.index}")
                checked += 1
    assert checked >= 6


class DoubleSelected(torch.nn.Module):
    """The values are the selection itself, transformed: their count is the mask's."""

    def forward(self, x):
        y = torch.zeros_like(x)
        m = x.sum(1) > 0
        y[m] = torch.relu(x[m] - 1)
        return y


def test_values_counted_by_the_same_mask(tmp_path):
    g = torch.Generator().manual_seed(0)
    ep = torch.export.export(DoubleSelected(), (torch.randn(6, 3, generator=g),))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    model = aotc.load_package(path)
    for shift in (-9.0, 0.0, 9.0):  # no row, some rows, every row selected
        x = torch.randn(6, 3, generator=g) + shift
        torch.testing.assert_close(model(x), ep.module()(x))
    calls = [[(torch.randn(6, 3, generator=g) + s).numpy()] for s in (-9.0, 0.5)]
    for outs, args in zip(run_without_torch(path, calls, tmp_path / "io"), calls):
        torch.testing.assert_close(torch.from_numpy(outs[0]),
                                   ep.module()(torch.from_numpy(args[0])))
