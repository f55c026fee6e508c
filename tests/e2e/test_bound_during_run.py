"""Sizes that a reduction or a matmul decides: `.item()` of a sum, a mask computed from a
reduction or a matmul. The symbol binds during the run, right after the kernel computing
it; later kernels, arena slots and outputs are sized from it (ir/binding.py). Compared with
ep.module() on several inputs (all-false masks included), and from a numpy-only process."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy_only import run_without_torch

import aotc


class SliceBySum(torch.nn.Module):
    def forward(self, x):
        n = (x > 0).sum().item()
        torch._check(n <= x.shape[0])
        return x[:n] * 2, n


class RowsWithPositiveSum(torch.nn.Module):
    def forward(self, x):
        s = x.sum(1)  # an output computed before its own size is known
        y = x[s > 0]
        return s, y * 2, y.sum(0)


class NonzeroOfProduct(torch.nn.Module):
    def forward(self, x, w):
        return torch.nonzero(x @ w > 0)


class NarrowByArgmax(torch.nn.Module):
    def forward(self, x, w):
        n = (x @ w).sum(1).argmax().item()
        torch._check(n >= 0)
        torch._check(n < x.shape[0])
        return x.narrow(0, 0, n + 1)


class TwoSelections(torch.nn.Module):
    """The second count reads a buffer sized by the first: two binding points."""

    def forward(self, x):
        y = x[x.sum(1) > 0]
        z = y[y.sum(1) > 1]
        return z + 1, y


class SumOfSlice(torch.nn.Module):
    """Only an intermediate is sized by the symbol: the output sizes need no early run."""

    def forward(self, x):
        n = (x > 0).sum().item()
        torch._check(n <= x.shape[0])
        return x[:n].sum()


def _x(seed: int, shape=(7, 3), shift: float = 0.0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) + shift


def _compile(module, args, tmp_path):
    ep = torch.export.export(module, args)
    return ep, aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")


def _check_calls(ep, model, calls):
    for args in calls:
        got, want = model(*args), ep.module()(*args)
        torch.testing.assert_close(got, want)


SHIFTS = (-9.0, -0.8, 0.0, 0.8, 9.0)  # all false, some, about half, most, all true


@pytest.mark.parametrize("module", [SliceBySum, RowsWithPositiveSum, TwoSelections, SumOfSlice])
def test_sizes_from_reductions(module, tmp_path):
    shape = (12,) if module in (SliceBySum, SumOfSlice) else (7, 3)
    ep, path = _compile(module(), (_x(0, shape),), tmp_path)
    model = aotc.load_package(path)
    _check_calls(ep, model, [(_x(k, shape, s),) for k, s in enumerate(SHIFTS)])
    calls = [[_x(k, shape, s).numpy()] for k, s in enumerate((-9.0, 0.3, 9.0))]
    for outs, args in zip(run_without_torch(path, calls, tmp_path / "io"), calls):
        want = ep.module()(torch.from_numpy(args[0]))
        want = list(want) if isinstance(want, (tuple, list)) else [want]
        for o, w in zip(outs, want):
            torch.testing.assert_close(torch.as_tensor(o), torch.as_tensor(w))


@pytest.mark.parametrize("module", [NonzeroOfProduct, NarrowByArgmax])
def test_sizes_from_a_matmul(module, tmp_path):
    w = _x(99, (3, 4))
    ep, path = _compile(module(), (_x(0), w), tmp_path)
    model = aotc.load_package(path)
    _check_calls(ep, model, [(_x(k, shift=s), w) for k, s in enumerate(SHIFTS)])
    calls = [[_x(k, shift=s).numpy(), w.numpy()] for k, s in enumerate((-2.0, 2.0))]
    for outs, args in zip(run_without_torch(path, calls, tmp_path / "io"), calls):
        want = ep.module()(*(torch.from_numpy(a) for a in args))
        torch.testing.assert_close(torch.from_numpy(outs[0]), want)


class CappedSlice(torch.nn.Module):
    def forward(self, x):
        n = (x > 0).sum().item()
        torch._check(n <= 8)
        return x[:n]


def test_a_value_outside_its_range_is_an_input_error(tmp_path):
    ep, path = _compile(CappedSlice(), (_x(0, (12,)),), tmp_path)
    model = aotc.load_package(path)
    x = torch.ones(12)
    x[8:] = -1.0
    torch.testing.assert_close(model(x), ep.module()(x))
    with pytest.raises(aotc.InputError, match=r"\.item\(\) value u\d+ is 12, outside the allowed "
                                              r"range (\(-inf|\[-?\d+), 8\]"):
        model(torch.ones(12))


def test_the_sizes_come_from_the_current_call(tmp_path):
    """Same input shapes, different data: the output size follows each call's data."""
    ep, path = _compile(RowsWithPositiveSum(), (_x(0),), tmp_path)
    model = aotc.load_package(path)
    seen = set()
    for k, s in enumerate(SHIFTS * 2):
        x = _x(k, shift=s)
        got = model(x)
        torch.testing.assert_close(got, ep.module()(x))
        seen.add(got[1].shape[0])
    assert len(seen) >= 3 and 0 in seen and 7 in seen
    assert np.asarray(model(_x(1, shift=-9.0).numpy())[1]).shape == (0, 3)
