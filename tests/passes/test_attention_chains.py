"""passes/attention.py: which written-out attention chains it finds, read from its dump."""
from __future__ import annotations

import torch
from torch import nn

from aotc.passes.attention import find_attention, format_chains


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _chains(fn, *shapes, extra=()) -> str:
    args = tuple(torch.randn(s) for s in shapes) + tuple(extra)
    ep = torch.export.export(Fn(fn), args)
    return format_chains(find_attention(ep.graph))


def test_scaled_chain():
    text = _chains(lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1) * 0.125, -1) @ v,
                   (1, 2, 8, 16), (1, 2, 8, 16), (1, 2, 8, 16))
    assert text == ("matmul_1 = attention(xs_0, transpose^T, xs_2) scale=0.125 "
                    "[softmax, mul, matmul]\n")


def test_divided_and_masked_chain():
    def fn(q, k, v, keep):
        s = (q @ k.transpose(-2, -1)) / 4.0
        return torch.softmax(s.masked_fill(~keep, float("-inf")), -1) @ v
    text = _chains(fn, (2, 8, 16), (2, 8, 16), (2, 8, 16), extra=(torch.ones(8, 8) > 0,))
    assert text == ("matmul_1 = attention(xs_0, transpose^T, xs_2) scale=0.25 "
                    "masked_fill(bitwise_not, -inf) [softmax, masked_fill, div, matmul]\n")


def test_additive_mask_then_scale_is_not_a_chain():
    # (s + mask) * c scales the mask too: not the template's order
    text = _chains(lambda q, k, v, m: torch.softmax((q @ k.transpose(-2, -1) + m) * 0.5, -1) @ v,
                   (8, 16), (8, 16), (8, 16), (8, 8))
    assert text == ""


def test_scores_read_elsewhere_are_not_a_chain():
    def fn(q, k, v):
        s = q @ k.transpose(-2, -1)
        return torch.softmax(s, -1) @ v, s.sum()
    assert _chains(fn, (8, 16), (8, 16), (8, 16)) == ""
