"""Conditions export records beyond the symbol ranges are checked at run time: a
torch._check on a .item() value (the graph's _assert_scalar), on an int input or on input
sizes (export's input guards, which ep.module() checks too). A failed one is an InputError
naming it; inputs that satisfy them match ep.module(); also from a numpy-only process."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy_only import run_without_torch
from torch.export import Dim

import aotc


class EvenNotOne(torch.nn.Module):
    def forward(self, x, n):
        torch._check(n != 1)
        torch._check(n % 2 == 0)
        return x * n


class EvenCount(torch.nn.Module):
    def forward(self, x):
        n = (x > 0).sum().item()
        torch._check(n != 1)
        torch._check(n % 2 == 0)
        return x[:n]


class SizeGuards(torch.nn.Module):
    def forward(self, x):
        torch._check(x.shape[0] % 4 == 0)
        torch._check(x.shape[0] + x.shape[1] < 100)
        return x + 1


def _load(module, args, tmp_path, dynamic_shapes=None):
    ep = torch.export.export(module, args, dynamic_shapes=dynamic_shapes)
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    return ep, path, aotc.load_package(path)


def test_guards_on_an_int_input(tmp_path):
    ep, path, model = _load(EvenNotOne(), (torch.randn(4), 4), tmp_path,
                            ({0: Dim.DYNAMIC}, Dim.DYNAMIC))
    for x, n in ((torch.randn(4), 4), (torch.randn(7), 0), (torch.randn(2), 10)):
        torch.testing.assert_close(model(x, n), ep.module()(x, n))
    with pytest.raises(aotc.InputError, match=r"the input guard n != 1 does not hold"):
        model(torch.randn(4), 1)
    with pytest.raises(aotc.InputError, match=r"the input guard \(n % 2\) == 0 does not hold"):
        model(torch.randn(4), 3)
    with pytest.raises(AssertionError, match="Guard failed"):  # eager refuses them too
        ep.module()(torch.randn(4), 3)


def test_checks_on_an_item_value(tmp_path):
    four = torch.tensor([1.0, 1, -1, -1, 1, 1, -1, -1])
    ep, path, model = _load(EvenCount(), (four,), tmp_path)
    for x in (four, -torch.ones(8), torch.ones(8)):  # 4, 0 and 8 positive values
        torch.testing.assert_close(model(x), ep.module()(x))
    with pytest.raises(aotc.InputError, match=r"the check Ne\(u0, 1\) .*does not hold"):
        model(torch.tensor([1.0, -1, -1, -1, -1, -1, -1, -1]))
    with pytest.raises(aotc.InputError, match=r"the check Eq\(PythonMod\(u0, 2\), 0\)"):
        model(torch.tensor([1.0, 1, 1, -1, -1, -1, -1, -1]))
    calls = [[np.array([1.0, 1, -1, -1, -1, -1, -1, -1], np.float32)],
             [np.ones(8, np.float32)]]
    for outs, args in zip(run_without_torch(path, calls, tmp_path / "io"), calls):
        torch.testing.assert_close(torch.from_numpy(outs[0]),
                                   ep.module()(torch.from_numpy(args[0])))


def test_guards_on_input_sizes(tmp_path):
    ep, path, model = _load(SizeGuards(), (torch.randn(12, 3),), tmp_path,
                            ({0: Dim.DYNAMIC, 1: Dim.DYNAMIC},))
    for shape in ((12, 3), (4, 9), (8, 80)):
        x = torch.randn(*shape)
        torch.testing.assert_close(model(x), ep.module()(x))
    with pytest.raises(aotc.InputError, match=r"\(x.size\(\)\[0\] % 4\) == 0 does not hold"):
        model(torch.randn(10, 3))
    with pytest.raises(aotc.InputError, match=r"x.size\(\)\[1\] \+ x.size\(\)\[0\] < 100"):
        model(torch.randn(96, 7))
    script_calls = [[np.ones((8, 5), np.float32)]]
    outs = run_without_torch(path, script_calls, tmp_path / "io")
    torch.testing.assert_close(torch.from_numpy(outs[0][0]), torch.full((8, 5), 2.0))
