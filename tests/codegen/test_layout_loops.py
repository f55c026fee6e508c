"""Copies that change the layout: a permute followed by a reshape that merges axes loops
the merged axis as (outer, inner), so the divisions and moduli leave the loads; a cat along
the last axis loops each input's range on its own, so no select or clamped index remains.
Values against eager with odd sizes and several inputs, and the loops' form in the code."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from aotc.passes.pipeline import compile_program
from aotc.target import host_target


class MergeHeads(torch.nn.Module):
    def forward(self, x):  # (B, H, S, D) -> (B, S, H*D), as after attention
        b, h, s, d = x.shape
        return x.permute(0, 2, 1, 3).reshape(b, s, h * d) * 2


class Cats(torch.nn.Module):
    def forward(self, x, y):
        return (torch.cat([x, y * 2, x + 1], -1), torch.cat([y, x], 1).relu(),
                torch.cat([x, y], 0), F.pad(x, (2, 3), value=-1.0))


def kernel_of(source: str, name: str) -> str:
    start = source.index(f"_{name}(const int64_t *sym")
    return source[start:source.index("\n}\n", start)]


@pytest.mark.parametrize("shape", [(2, 4, 37, 16), (1, 3, 5, 9), (2, 12, 7, 64), (1, 2, 3, 1)])
def test_merged_heads_match_eager(compile_model, shape):
    x = torch.randn(*shape)
    ep, model = compile_model(MergeHeads(), (x,))
    torch.testing.assert_close(model(x), ep.module()(x))


def test_merged_heads_dynamic_sequence(compile_model):
    s = torch.export.Dim("s", min=2, max=300)
    ep, model = compile_model(MergeHeads(), (torch.randn(2, 4, 8, 16),), {"x": {2: s}})
    for n in (2, 3, 77, 300):
        x = torch.randn(2, 4, n, 16)
        torch.testing.assert_close(model(x), ep.module()(x))


def test_merged_axis_loops_without_division():
    ep = torch.export.export(MergeHeads(), (torch.randn(2, 4, 37, 16),))
    kernel = compile_program(ep, host_target(), build=False).source
    body = kernel[kernel.index("static void k0_"):]
    body = body[:body.index("\n}\n")]
    assert "for (int64_t i2i = 0; i2i < 16; ++i2i)" in body
    assert "/" not in body.split("{", 1)[1] and "%" not in body


@pytest.mark.parametrize("rows,width", [(3, 300), (5, 7), (1, 1), (4, 64)])
def test_cats_match_eager(compile_model, rows, width):
    x, y = torch.randn(rows, width), torch.randn(rows, width)
    ep, model = compile_model(Cats(), (x, y))
    torch.testing.assert_close(model(x, y), ep.module()(x, y))


def test_cat_with_dynamic_rows(compile_model):
    n = torch.export.Dim("n", min=1, max=64)
    ep, model = compile_model(Cats(), (torch.randn(4, 9), torch.randn(4, 9)),
                              {"x": {0: n}, "y": {0: n}})
    for rows in (1, 5, 64):
        x, y = torch.randn(rows, 9), torch.randn(rows, 9)
        torch.testing.assert_close(model(x, y), ep.module()(x, y))


class Widths(torch.nn.Module):
    def forward(self, x, y, z):
        return torch.cat([x, y, z], 1), torch.cat([z.to(torch.int32), x.to(torch.int32)], -1)


def test_cat_of_different_widths(compile_model):
    x, y, z = torch.randn(3, 5), torch.randn(3, 17), torch.randn(3, 1)
    ep, model = compile_model(Widths(), (x, y, z))
    torch.testing.assert_close(model(x, y, z), ep.module()(x, y, z))


def test_cat_loops_each_input_on_its_own():
    ep = torch.export.export(Widths(), (torch.randn(3, 5), torch.randn(3, 17), torch.randn(3, 1)))
    source = compile_program(ep, host_target(), build=False).source
    kernel = source[source.index("static void k0_"):]
    kernel = kernel[:kernel.index("\n}\n")]
    for lo, hi in ((0, 5), (5, 22), (22, 23)):
        assert f"for (int64_t i1 = {lo}; i1 < {hi}; ++i1)" in kernel
    assert "std::min" not in kernel and "std::max" not in kernel and "?" not in kernel


class Transposes(torch.nn.Module):
    def forward(self, x):  # (B, M, N): the last two axes swapped, and a broadcast beside
        return x.transpose(1, 2).contiguous() * 3, x.transpose(1, 2) + x[:, :1, :].transpose(1, 2)


@pytest.mark.parametrize("shape", [(2, 37, 53), (1, 16, 16), (3, 1, 40), (2, 100, 17)])
def test_transposes_match_eager(compile_model, shape):
    x = torch.randn(*shape)
    ep, model = compile_model(Transposes(), (x,))
    torch.testing.assert_close(model(x), ep.module()(x))


def test_transpose_dynamic_sizes(compile_model):
    m, n = torch.export.Dim("m", min=2, max=200), torch.export.Dim("n", min=2, max=200)
    ep, model = compile_model(Transposes(), (torch.randn(2, 8, 9),), {"x": {1: m, 2: n}})
    for rows, cols in ((2, 2), (17, 33), (200, 31)):
        x = torch.randn(2, rows, cols)
        torch.testing.assert_close(model(x), ep.module()(x))


def test_transpose_runs_in_tiles_and_a_broadcast_does_not():
    ep = torch.export.export(Transposes(), (torch.randn(2, 37, 53),))
    source = compile_program(ep, host_target(), build=False).source
    tiled = [k for k in source.split("static void ")[1:] if "i2b += 16" in k]
    assert tiled and all("for (int64_t i1b = 0; i1b < 53; i1b += 16)" in k for k in tiled)

    class Broadcast(torch.nn.Module):
        def forward(self, v):
            return v[:, :, None].expand(4, 30, 50) + 1

    ep = torch.export.export(Broadcast(), (torch.randn(4, 30),))
    assert "+= 16" not in compile_program(ep, host_target(), build=False).source
