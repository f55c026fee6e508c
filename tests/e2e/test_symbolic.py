"""Symbolic values: SymInt/SymFloat/SymBool outputs come back as Python numbers, int
inputs bind shape symbols, a symbol seen only in a size expression (2*d) is solved from
that size at run time; each against ep.module() and from a numpy-only process."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy_only import run_without_torch
from torch.export import Dim

import aotc


class SymbolicOutputs(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        return x * 2, n, 2 * n + 1, n / 2, n > 3


class IntInput(torch.nn.Module):
    def forward(self, x, n: int):
        return x[:n] * 2, n + 1


class EvenRows(torch.nn.Module):
    def forward(self, x):
        return x.view(2, -1, 3).sum(0)


def _compile(module, args, dynamic_shapes, tmp_path):
    ep = torch.export.export(module, args, dynamic_shapes=dynamic_shapes)
    return ep, aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")


def test_symbolic_outputs_are_python_numbers(tmp_path):
    d = Dim("d", min=1, max=64)
    ep, path = _compile(SymbolicOutputs(), (torch.randn(4, 3),), {"x": {0: d}}, tmp_path)
    model = aotc.load_package(path)
    for n in (2, 3, 4, 9):
        x = torch.randn(n, 3)
        got, want = model(x), ep.module()(x)
        torch.testing.assert_close(got, want)
        assert [type(v) for v in got[1:]] == [int, int, float, bool]
    got = run_without_torch(path, [[np.ones((n, 3), np.float32)] for n in (5, 8)], tmp_path / "io")
    assert [[o.item() for o in outs[1:]] for outs in got] == [[5, 11, 2.5, True],
                                                             [8, 17, 4.0, True]]


def test_int_input_binds_a_shape_symbol(tmp_path):
    ep, path = _compile(IntInput(), (torch.randn(8, 3), 4), {"x": None, "n": Dim.DYNAMIC},
                        tmp_path)
    model = aotc.load_package(path)
    for n in (2, 5, 8):  # export guards n != 1 (and the range is [0, 8])
        x = torch.randn(8, 3)
        torch.testing.assert_close(model(x, n), ep.module()(x, n))
    with pytest.raises(aotc.InputError, match="input 'n' is 9, outside the allowed range"):
        model(torch.randn(8, 3), 9)
    with pytest.raises(aotc.InputError, match="input 'n': expected an int"):
        model(torch.randn(8, 3), 2.0)
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    (outs,) = run_without_torch(path, [[x, np.array(3)]], tmp_path / "io")
    want = ep.module()(torch.from_numpy(x), 3)
    torch.testing.assert_close(torch.from_numpy(outs[0]), want[0])
    assert outs[1].item() == want[1] == 4


def test_symbol_in_a_size_expression_is_solved(tmp_path):
    d = Dim("d", min=1, max=64)
    ep, path = _compile(EvenRows(), (torch.randn(8, 3),), {"x": {0: 2 * d}}, tmp_path)
    model = aotc.load_package(path)
    for n in (4, 6, 12, 128):
        x = torch.randn(n, 3)
        torch.testing.assert_close(model(x), ep.module()(x))
    with pytest.raises(aotc.InputError, match=r"dim 0 is 7, which is 2\*s\d+ for no integer"):
        model(torch.randn(7, 3))
    with pytest.raises(aotc.InputError, match="outside the allowed range"):
        model(torch.randn(130, 3))
    x = np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32)
    (outs,) = run_without_torch(path, [[x]], tmp_path / "io")
    torch.testing.assert_close(torch.from_numpy(outs[0]), ep.module()(torch.from_numpy(x)))


class NarrowByItem(torch.nn.Module):
    def forward(self, x, t):
        n = t.item()
        torch._check(n >= 0)
        torch._check(n <= x.shape[0])
        return x.narrow(0, 0, n) * 2, n


def test_item_drives_a_narrow(tmp_path):
    ep, path = _compile(NarrowByItem(), (torch.randn(8, 3), torch.tensor(3)), None, tmp_path)
    model = aotc.load_package(path)
    for k in (0, 3, 5, 8):  # the same shapes in, a different size out each time
        x = torch.randn(8, 3)
        got, want = model(x, torch.tensor(k)), ep.module()(x, torch.tensor(k))
        torch.testing.assert_close(got, want)
        assert got[0].shape == (k, 3) and got[1] == k
    with pytest.raises(aotc.InputError, match=r"\.item\(\) value u\d+ is 9, outside the allowed "
                                              r"range \[0, 8\]"):
        model(torch.randn(8, 3), torch.tensor(9))
    x = np.ones((8, 3), np.float32)
    got = run_without_torch(path, [[x, np.array(k)] for k in (2, 6)], tmp_path / "io")
    assert [(o[0].shape, o[1].item()) for o in got] == [((2, 3), 2), ((6, 3), 6)]


class ScaleByItem(torch.nn.Module):
    def forward(self, x, t):
        return x * t.item()


class ItemArithmetic(torch.nn.Module):
    def forward(self, x, t):
        return x * (t.item() / 2)


def test_float_item_as_a_value(tmp_path):
    ep, path = _compile(ScaleByItem(), (torch.randn(3), torch.tensor(2.0)), None, tmp_path)
    model = aotc.load_package(path)
    for v in (3.0, -0.5, 0.0):
        x = torch.randn(3)
        torch.testing.assert_close(model(x, torch.tensor(v)), ep.module()(x, torch.tensor(v)))
    ep = torch.export.export(ItemArithmetic(), (torch.randn(3), torch.tensor(2.0)))
    with pytest.raises(aotc.UnsupportedOperatorError, match="float .item.. value"):
        aotc.compile_and_package(ep, package_path=tmp_path / "refused.pt2")
