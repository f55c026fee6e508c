"""Reductions over a non-last axis (a sum over dim 0, a mean over H, W with channels last, a
variance over rows) run as column reductions: a tile of outputs accumulates side by side
while the reduced axes are walked, so the innermost loop reads consecutive elements. Values
against eager, with odd sizes (tails of the tile), several tiles, and dynamic sizes."""
from __future__ import annotations

import pytest
import torch

from aotc.passes.pipeline import compile_program
from aotc.target import host_target


class Columns(torch.nn.Module):
    def forward(self, x):
        return (x.sum(0), x.amax(0), x.amin(0, keepdim=True), x.mean(0), x.var(0),
                torch.softmax(x, 0), x.prod(0), (x > 0).any(0), x.to(torch.int32).sum(0))


class ChannelsLast(torch.nn.Module):
    def forward(self, x):  # (N, H, W, C): pooling over H, W and statistics over N, H, W
        return x.mean((1, 2)), x.amax((1, 2), keepdim=True), x.sum((0, 1, 2)), x.std((0, 2))


@pytest.mark.parametrize("shape", [(7, 5), (33, 64), (129, 131), (1, 200), (300, 1)])
def test_column_reductions_match_eager(compile_model, shape):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    ep, model = compile_model(Columns(), (x,))
    torch.testing.assert_close(model(x), ep.module()(x), equal_nan=True)


@pytest.mark.parametrize("shape", [(2, 5, 3, 7), (3, 9, 11, 70), (1, 4, 4, 64)])
def test_channels_last_pooling_matches_eager(compile_model, shape):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    ep, model = compile_model(ChannelsLast(), (x,))
    torch.testing.assert_close(model(x), ep.module()(x), equal_nan=True)


def test_dynamic_column_count_and_length(compile_model):
    n, c = torch.export.Dim("n", min=2, max=512), torch.export.Dim("c", min=2, max=512)
    ep, model = compile_model(Columns(), (torch.randn(8, 16),), {"x": {0: n, 1: c}})
    for rows, cols in ((2, 2), (5, 63), (17, 64), (130, 65), (3, 300)):
        x = torch.randn(rows, cols)
        torch.testing.assert_close(model(x), ep.module()(x), equal_nan=True)


def test_nan_wins_in_column_max(compile_model):
    x = torch.randn(9, 70)
    x[4, 3] = float("nan")
    x[0, 69] = float("nan")
    ep, model = compile_model(Columns(), (x,))
    ours, eager = model(x), ep.module()(x)
    for k in (1, 2):  # amax, amin
        torch.testing.assert_close(ours[k], eager[k], equal_nan=True)


def test_column_reduction_reads_along_the_output_axis():
    """The sum over dim 0 walks the rows outside and the columns inside (unit stride)."""
    ep = torch.export.export(Columns(), (torch.randn(100, 300),))
    source = compile_program(ep, host_target(), build=False).source
    kernel = source[source.index("static void k0_"):]
    kernel = kernel[:kernel.index("\n}\n")]
    assert "for (int64_t r0 = 0; r0 < 100; ++r0)" in kernel
    assert "#pragma omp simd\n" in kernel
    loop = kernel[kernel.index("#pragma omp simd"):]
    assert "for (int64_t i0 = jb; i0 < je; ++i0)" in loop and "in_x[300*r0 + i0]" in loop


class Pools(torch.nn.Module):
    def forward(self, x):  # (N, C, H, W): global pools and statistics over trailing axes
        return (x.mean((2, 3)), x.amax((2, 3), keepdim=True), x.sum((1, 2, 3)),
                x.var((1, 2, 3)), x.amin((1, 3)), torch.nn.functional.adaptive_avg_pool2d(x, 1))


@pytest.mark.parametrize("shape", [(2, 5, 7, 7), (1, 3, 1, 9), (3, 4, 5, 33), (2, 2, 16, 16)])
def test_trailing_reduced_axes_match_eager(compile_model, shape):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    ep, model = compile_model(Pools(), (x,))
    torch.testing.assert_close(model(x), ep.module()(x), equal_nan=True)


def test_trailing_reduced_axes_dynamic(compile_model):
    h, w = torch.export.Dim("h", min=2, max=64), torch.export.Dim("w", min=2, max=64)
    ep, model = compile_model(Pools(), (torch.randn(2, 3, 7, 7),), {"x": {2: h, 3: w}})
    for rows, cols in ((2, 2), (7, 7), (13, 40), (64, 3)):
        x = torch.randn(2, 3, rows, cols)
        torch.testing.assert_close(model(x), ep.module()(x), equal_nan=True)


def test_global_pool_reduces_one_run_of_elements():
    """A 7x7 pool reduces 49 consecutive elements in one loop (full vectors of lanes)."""
    ep = torch.export.export(Pools(), (torch.randn(2, 5, 7, 7),))
    source = compile_program(ep, host_target(), build=False).source
    kernel = source[source.index("static void k0_"):]
    kernel = kernel[:kernel.index("\n}\n")]
    assert "rs < 49" in kernel and "r1" not in kernel


class Windows(torch.nn.Module):
    def forward(self, x):  # pooling windows: a few elements per output, read with a stride
        f = torch.nn.functional
        return (f.max_pool2d(x, 3, 2, 1), f.max_pool2d(x, 2), f.avg_pool2d(x, 3, 1, 1),
                f.max_pool2d(x, (1, 3), (1, 2), dilation=(1, 2)), x.sum(-1), x.amax(1))


@pytest.mark.parametrize("shape", [(1, 2, 9, 9), (2, 3, 16, 35), (1, 1, 5, 70)])
def test_pooling_windows_match_eager(compile_model, shape):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    x[0, 0, 1, 2] = float("nan")
    ep, model = compile_model(Windows(), (x,))
    torch.testing.assert_close(model(x), ep.module()(x), equal_nan=True)


def test_pooling_window_vectorizes_along_the_output_row():
    """A 3x3 max pool walks its window outside and a row of outputs inside, so the
    innermost loop runs over the output row instead of over three elements."""
    ep = torch.export.export(torch.nn.MaxPool2d(3, 2, 1), (torch.randn(1, 4, 40, 40),))
    source = compile_program(ep, host_target(), build=False).source
    kernel = source[source.index("static void k0_"):]
    kernel = kernel[:kernel.index("\n}\n")]
    loop = kernel[kernel.index("#pragma omp simd"):]
    assert "for (int64_t i3 = jb; i3 < je; ++i3)" in loop and "lanes" not in kernel
