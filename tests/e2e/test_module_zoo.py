"""Everyday modules and tensor idioms, each compiled and compared with eager."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from models import Fn


def causal_softmax(x):
    mask = torch.ones(x.shape[-1], x.shape[-1], dtype=torch.bool).triu(1)
    return x.masked_fill(mask, float("-inf")).softmax(-1)


ZOO = {
    "cast_to_float64": (Fn(lambda x: x.to(torch.float64) * 2), (torch.randn(3, 4),)),
    "dropout_eval": (torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.1)),
                     (torch.randn(3, 4),)),
    "batchnorm1d_eval": (torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6)),
                         (torch.randn(5, 4),)),
    "layernorm_module": (torch.nn.LayerNorm(4), (torch.randn(3, 4),)),
    "stack": (Fn(lambda x: torch.stack([x, x * 2], dim=1)), (torch.randn(3, 4),)),
    "chunk": (Fn(lambda x: torch.chunk(x, 2, dim=-1)[1] + 1), (torch.randn(3, 4),)),
    "masked_fill": (Fn(lambda x: x.masked_fill(x > 0, -1.0)), (torch.randn(3, 4),)),
    "causal_mask_softmax": (Fn(causal_softmax), (torch.randn(4, 4),)),
    "flatten": (torch.nn.Flatten(), (torch.randn(3, 2, 2),)),
    "multihead_attention": (torch.nn.MultiheadAttention(8, 2, batch_first=True),
                            (torch.randn(2, 5, 8),) * 3),
    "causal_sdpa": (Fn(lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True)),
                    (torch.randn(1, 2, 5, 4),)),
    "int64_arithmetic": (Fn(lambda x: (x * 3 + 1) // 2 % 5 - x.sum()), (torch.arange(12).view(3, 4),)),
    "bool_logic": (Fn(lambda x: ((x > 0) & (x < 1)) | ~(x > -1)), (torch.randn(3, 4),)),
    "broadcast_expand": (Fn(lambda x: x.unsqueeze(0).expand(2, 3, 4) + torch.arange(4.0)),
                         (torch.randn(3, 4),)),
    "full_reductions": (Fn(lambda x: x.mean() + x.var() + x.amax() - x.amin()), (torch.randn(3, 4),)),
    "cat_slices": (Fn(lambda x: torch.cat([x[:, :1], x[:, 2:] * 2, x.new_zeros(3, 1)], dim=1)),
                   (torch.randn(3, 4),)),
}


@pytest.mark.parametrize("name", sorted(ZOO))
def test_module_matches_eager(compile_model, name):
    torch.manual_seed(0)
    module, args = ZOO[name]
    ep, model = compile_model(module, args)
    with torch.no_grad():
        expected = ep.module()(*args)
    torch.testing.assert_close(model(*args), expected)
