"""Ops with no lowering of their own compile through a per-node decomposition."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

CASES = {
    "elu": lambda x: F.elu(x),
    "softplus": lambda x: F.softplus(x),
    "mish": lambda x: F.mish(x),
    "addcmul": lambda x: torch.addcmul(x, x, x, value=0.5),
    "lerp": lambda x: torch.lerp(x, x * 2, 0.3),
    "layer_norm": lambda x: F.layer_norm(x, (4,)),
    "sdpa": lambda x: F.scaled_dot_product_attention(*(x.view(1, 2, 3, 2),) * 3),
}


class Wrap(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


@pytest.mark.parametrize("name", sorted(CASES))
def test_decomposed_ops_match_eager(compile_model, name):
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    ep, model = compile_model(Wrap(CASES[name]), (x,))
    torch.testing.assert_close(model(x), ep.module()(x))
