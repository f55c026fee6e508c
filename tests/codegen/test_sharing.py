"""Kernels with the same code share one function: a model that repeats a block writes each
of its kernels once, calls it with each block's buffers (in the right order), and still
matches eager; kernels that differ in anything but buffer names are not merged."""
from __future__ import annotations

import re

import torch

import aotc
from aotc.passes.pipeline import compile_program
from aotc.target import host_target
from models import EncoderBlock


class Blocks(torch.nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.blocks = torch.nn.ModuleList(EncoderBlock() for _ in range(n))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class Scales(torch.nn.Module):
    """Two pointwise kernels that differ only in a constant, one that repeats the first."""

    def forward(self, x, y):
        a = torch.sigmoid(x * 3.0 + 1.0)
        b = torch.sigmoid(x * 2.0 + 1.0)
        c = torch.sigmoid(y * 3.0 + 1.0)
        return a.sum(0) + b.sum(0) + c.sum(0), a, b, c


def _source(module, args) -> str:
    with torch.no_grad():
        ep = torch.export.export(module.eval(), args)
    return compile_program(ep, host_target(), build=False).source


def _functions(source: str) -> int:
    return len(re.findall(r"^static void k\d+_", source, re.M))


def test_repeated_blocks_write_each_kernel_once_and_match_eager(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(2, 8, 32)
    one, three = _source(Blocks(1), (x,)), _source(Blocks(3), (x,))
    assert _functions(three) == _functions(one) > 0
    assert len(re.findall(r"^// k\d+_\w+: the code of k\d+_", three, re.M)) == 2 * _functions(one)
    model = Blocks(3).eval()
    with torch.no_grad():
        ep = torch.export.export(model, (x,))
        path = aotc.compile_and_package(ep, package_path=tmp_path / "blocks.pt2")
    x2 = torch.randn(2, 8, 32)
    torch.testing.assert_close(aotc.load_package(path)(x2), ep.module()(x2))


def test_kernels_that_differ_beyond_names_stay_apart(tmp_path):
    args = (torch.randn(4, 16), torch.randn(4, 16))
    source = _source(Scales(), args)
    shared = dict(re.findall(r"^// (k\d+_\w+): the code of (k\d+_\w+)", source, re.M))
    written = re.findall(r"^static void (k\d+_sigmoid\w*)\(.*?\n}\n", source, re.M | re.S)
    assert len(written) == 2  # x * 3 and x * 2: one function each; y * 3 reuses the first
    assert "t0 * 3.0f" in source and "t0 * 2.0f" in source
    assert [first for name, first in shared.items() if "sigmoid" in name] == [written[0]]
    with torch.no_grad():
        ep = torch.export.export(Scales(), args)
        path = aotc.compile_and_package(ep, package_path=tmp_path / "scales.pt2")
    args2 = (torch.randn(4, 16), torch.randn(4, 16))
    torch.testing.assert_close(aotc.load_package(path)(*args2), ep.module()(*args2))
