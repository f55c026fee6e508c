"""The coverage harness leaves out samples whose program draws random numbers (no run can
match eager's) and only those: an op that merely could draw (scaled_dot_product_attention,
dropout) with probability 0 or out of training is compared as usual."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from aotc.tools.opcov import category, dtypes_of
from aotc.tools.opsweep import draws_random


class Attention(torch.nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.p)


class Dropout(torch.nn.Module):
    def __init__(self, p, training):
        super().__init__()
        self.p, self.on = p, training

    def forward(self, x):
        return F.dropout(x, self.p, training=self.on) + 1


@pytest.mark.parametrize("module,random", [
    (Attention(0.0), False), (Attention(0.5), True),
    (Dropout(0.5, True), True), (Dropout(0.5, False), False), (Dropout(0.0, True), False),
])
def test_draws_random(module, random):
    x = torch.randn(1, 2, 3, 4)
    args = (x, x, x) if isinstance(module, Attention) else (x,)
    ep = torch.export.export(module, args)
    assert draws_random(ep) is random


@pytest.mark.parametrize("name,cat", [
    ("cfloat", "in scope"), ("nn.functional.fractional_max_pool2d", "random"),
    ("norm.nuc", "in scope"), ("norm", "in scope"), ("to_sparse", "sparse"),
    ("nn.functional.max_pool2d", "in scope"), ("linalg.inv", "in scope"),
])
def test_categories(name, cat):
    assert category(name) == cat


@pytest.mark.parametrize("name,wide", [
    ("linalg.inv", True), ("fft.rfft", True), ("norm.nuc", True), ("cholesky", True),
    ("view_as_complex", True), ("stft", True), ("norm", False), ("add", False),
])
def test_linalg_fft_and_complex_ops_also_run_in_float64_and_complex64(name, wide):
    assert (torch.float64 in dtypes_of(name) and torch.complex64 in dtypes_of(name)) is wide
