"""histc, histogram and bincount against eager: bins from PyTorch's CPU arithmetic (the
data's range when none is given, an empty range widened), weights, density, explicit
edges; bincount's length bound during the run from the data's max."""
from __future__ import annotations

import pytest
import torch


class Histc(torch.nn.Module):
    def forward(self, x):
        return torch.histc(x, bins=7, min=-2, max=3), torch.histc(x, bins=5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_histc_matches_eager(compile_model, dtype):
    g = torch.Generator().manual_seed(0)
    first = (torch.randn(4, 9, generator=g) * 2).to(dtype)
    ep, model = compile_model(Histc(), (first,))
    cases = [first, torch.full((4, 9), 1.5, dtype=dtype),  # one value: the range widened by one
             torch.linspace(-2, 3, 36).reshape(4, 9).to(dtype)]  # values on the edges
    for x in cases:
        for got, want in zip(model(x), ep.module()(x)):
            torch.testing.assert_close(got, want)


class Histogram(torch.nn.Module):
    def forward(self, x, w, edges):
        return (torch.histogram(x, 6), torch.histogram(x, 4, range=(-1.0, 1.0), weight=w),
                torch.histogram(x, 5, density=True), torch.histogram(x, edges, weight=w),
                torch.histogram(x, edges, density=True))


def test_histogram_matches_eager(compile_model):
    g = torch.Generator().manual_seed(0)
    first, w = torch.randn(3, 8, generator=g), torch.rand(3, 8, generator=g)
    edges = torch.tensor([-1.5, -0.5, 0.0, 0.25, 2.0])
    ep, model = compile_model(Histogram(), (first, w, edges))
    for x in (first, torch.full((3, 8), 0.25), torch.randn(3, 8, generator=g)):
        for got, want in zip(model(x, w, edges), ep.module()(x, w, edges)):
            for a, b in zip(got, want):
                torch.testing.assert_close(a, b)


class Bincount(torch.nn.Module):
    def forward(self, x, w):
        return torch.bincount(x), torch.bincount(x, w, minlength=9)


def test_bincount_matches_eager(compile_model):
    first, w = torch.tensor([1, 4, 4, 0, 2]), torch.tensor([0.5, 1.0, -2.0, 3.0, 0.25])
    ep, model = compile_model(Bincount(), (first, w))
    for x in (first, torch.tensor([11, 0, 3, 3, 3]), torch.tensor([0, 0, 0, 0, 0])):
        for got, want in zip(model(x, w), ep.module()(x, w)):
            assert got.shape == want.shape
            torch.testing.assert_close(got, want)


def test_bincount_negative_value_is_an_input_error(compile_model):
    from aotc.errors import InputError

    x, w = torch.tensor([1, 4, 4, 0, 2]), torch.ones(5)
    ep, model = compile_model(Bincount(), (x, w))
    with pytest.raises(InputError):
        model(torch.tensor([1, -1, 0, 0, 0]), w)


class HistogramDD(torch.nn.Module):
    def forward(self, x, w, e0, e1):
        return (torch.histogramdd(x, [3, 4]),
                torch.histogramdd(x, [2, 5], range=[-1.0, 1.0, 0.5, 0.5], weight=w, density=True),
                torch.histogramdd(x, [e0, e1], weight=w))


def test_histogramdd_matches_eager(compile_model):
    g = torch.Generator().manual_seed(0)
    first, w = torch.randn(4, 6, 2, generator=g), torch.rand(4, 6, generator=g)
    e0, e1 = torch.tensor([-1.0, 0.0, 0.5, 2.0]), torch.tensor([-2.0, -0.25, 1.0])
    ep, model = compile_model(HistogramDD(), (first, w, e0, e1))
    for x in (first, torch.full((4, 6, 2), 0.5), torch.randn(4, 6, 2, generator=g)):
        for got, want in zip(model(x, w, e0, e1), ep.module()(x, w, e0, e1)):
            got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
            for a, b in zip(got, want):
                torch.testing.assert_close(a, b, equal_nan=True)
