"""Dynamic dimensions: unbounded, several at once, derived (2*b), shared between inputs."""
from __future__ import annotations

import pytest
import torch

from models import EncoderBlock


class Pair(torch.nn.Module):
    def forward(self, x, y):
        return x.repeat(2, 1) + y, (x @ x.t()).sum(0)


def test_derived_and_shared_dims(compile_model):
    b = torch.export.Dim("b", min=2, max=64)
    ep, model = compile_model(Pair(), (torch.randn(4, 3), torch.randn(8, 3)),
                              {"x": {0: b}, "y": {0: 2 * b}})
    for n in (2, 5, 64):
        x, y = torch.randn(n, 3), torch.randn(2 * n, 3)
        torch.testing.assert_close(model(x, y), ep.module()(x, y))
    with pytest.raises(ValueError, match=r"input 'y': dim 0 is 9, expected 2\*s\d+ = 10"):
        model(torch.randn(5, 3), torch.randn(9, 3))


def test_unbounded_dim(compile_model):
    b = torch.export.Dim("b")
    ep, model = compile_model(torch.nn.Linear(3, 2), (torch.randn(4, 3),), {"input": {0: b}})
    x = torch.randn(5000, 3)
    torch.testing.assert_close(model(x), ep.module()(x))


def test_two_dynamic_dims_in_a_transformer(compile_model):
    torch.manual_seed(0)
    batch, seq = torch.export.Dim("batch", min=1, max=8), torch.export.Dim("seq", min=2, max=64)
    ep, model = compile_model(EncoderBlock(), (torch.randn(2, 16, 32),),
                              {"x": {0: batch, 1: seq}})
    for b, s in ((1, 2), (3, 17), (8, 64)):
        x = torch.randn(b, s, 32)
        torch.testing.assert_close(model(x), ep.module()(x))
    with pytest.raises(ValueError, match=r"dim 1 is 65, outside the allowed range \[0, 64\]"):
        model(torch.randn(1, 65, 32))
