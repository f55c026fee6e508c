"""Scalar operands that are symbolic expressions of the input sizes (SymInt and SymFloat:
true division, floor division, sym_float/sym_int, sqrt, rounding), computed at run time
from the bound symbols with Python's number semantics; each against ep.module() at
several sizes, dtypes included."""
from __future__ import annotations

import math

import torch
from torch.export import Dim

import aotc

SIZES = [(6, 4), (7, 3), (5, 5), (9, 2), (4, 7)]


class Fills(torch.nn.Module):
    def forward(self, x):
        a, b = x.shape
        return (torch.full((b,), a / b), torch.full((2,), a // b), torch.full((2,), -a // 3),
                torch.full((2,), a % 3), torch.full((2,), torch.sym_float(a)),
                torch.full((2,), torch.sym_int(a / b)), torch.full((2,), torch.sym_sqrt(a)),
                torch.full((2,), math.floor(a / b)), torch.full((2,), math.ceil(a / b)),
                torch.full((2,), round(a / b)), torch.full((2,), (a / b) ** 0.5),
                torch.full((2,), max(a, b)), torch.full((2,), 2.5 * a - b),
                torch.full((2,), a / b, dtype=torch.int32),
                torch.full((3,), a / b, dtype=torch.float64),
                torch.full((3,), a * b, dtype=torch.float16),
                torch.full((2,), a / b, dtype=torch.bfloat16))


class Operands(torch.nn.Module):
    def forward(self, x, y):
        a, b = x.shape
        return (x * (a / b), x + a, y + a / b, y * a, x / (a // 2), x.abs() ** (a / b),
                torch.clamp(x, min=-b / a, max=b / a), torch.where(x > 0, x, a / b),
                torch.where(x > 0, a, b), y // (a - 1), torch.sub(x, a, alpha=b),
                y.clamp(max=a), x.pow(a), torch.rsub(y, a / b))


class Ranges(torch.nn.Module):
    def forward(self, x):
        a, b = x.shape
        return (torch.arange(a, 2 * a + b, 1), torch.arange(0.5, a, 1.5),
                torch.arange(b, 3 * a, a // 2), torch.linspace(0, a, 5),
                torch.linspace(-b / a, a, 4, dtype=torch.int64),
                torch.arange(b, dtype=torch.float32) * (a / b), torch.arange(0, a, 2) + b)


def _check(module, make_inputs, min_a, tmp_path, n_inputs=1):
    dims = {0: Dim("a", min=min_a, max=64), 1: Dim("b", min=2, max=64)}
    ep = torch.export.export(module, make_inputs(6, 4), dynamic_shapes=(dims,) * n_inputs)
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2"))
    for a, b in SIZES:
        inputs = make_inputs(a, b)
        torch.testing.assert_close(model(*inputs), ep.module()(*inputs))


def test_fill_values_from_sizes(tmp_path):
    _check(Fills(), lambda a, b: (torch.randn(a, b),), 2, tmp_path)


def test_scalar_operands_from_sizes(tmp_path):
    _check(Operands(), lambda a, b: (torch.randn(a, b),
                                     torch.randint(-5, 5, (a, b), dtype=torch.int32)),
           2, tmp_path, n_inputs=2)


def test_ranges_from_sizes(tmp_path):
    _check(Ranges(), lambda a, b: (torch.randn(a, b),), 4, tmp_path)


def test_size_ratio_fill(tmp_path):
    """torch.full((b,), a / b) with both dims dynamic: a float fill computed per call."""
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.full((x.shape[1],), x.shape[0] / x.shape[1])

    ep = torch.export.export(M(), (torch.randn(6, 4),),
                             dynamic_shapes=({0: Dim("a"), 1: Dim("b")},))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2"))
    for a, b in [(6, 4), (7, 3)]:
        x = torch.randn(a, b)
        torch.testing.assert_close(model(x), ep.module()(x))
