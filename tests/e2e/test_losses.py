"""Losses against eager: every reduction of margin_ranking_loss and hinge_embedding_loss
(their decomposition-table entries reject the integer reduction; the composite kernel
traces), and soft_margin_loss of half inputs, whose exp overflows to inf in the half type."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

REDUCTIONS = ("none", "mean", "sum")


class Ranking(torch.nn.Module):
    def __init__(self, reduction):
        super().__init__()
        self.reduction = reduction

    def forward(self, a, b, y):
        # margins exact in half: eager adds a scalar to a half tensor after rounding it to half
        return (F.margin_ranking_loss(a, b, y, margin=0.25, reduction=self.reduction),
                F.hinge_embedding_loss(a, y, margin=1.5, reduction=self.reduction),
                F.soft_margin_loss(a, y, reduction=self.reduction))


@pytest.mark.parametrize("dtype", (torch.float32, torch.float16, torch.bfloat16), ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_ranking_losses_match_eager(compile_model, reduction, dtype):
    g = torch.Generator().manual_seed(0)
    # large products x * y: exp(-x * y) leaves the half range, as in eager
    a = (torch.randn(6, 5, generator=g) * 6).to(dtype)
    b = torch.randn(6, 5, generator=g).to(dtype)
    y = torch.where(torch.rand(6, 5, generator=g) < 0.5, -1.0, 1.0).to(dtype)
    ep, model = compile_model(Ranking(reduction), (a, b, y))
    for got, want in zip(model(a, b, y), ep.module()(a, b, y)):
        torch.testing.assert_close(got, want, equal_nan=True)
