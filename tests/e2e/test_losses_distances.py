"""Losses, distances and norms against eager: every reduction of margin_ranking_loss and
hinge_embedding_loss (their decomposition-table entries reject the integer reduction; the
composite kernel traces), soft_margin_loss of half inputs (its exp overflows to inf in the
half type), pdist with the triangle indices it reads through, renorm of half inputs."""
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


class PairDistances(torch.nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return F.pdist(x, self.p), torch.triu_indices(4, 6, -1), torch.tril_indices(5, 3, 1)


@pytest.mark.parametrize("p", (0.0, 1.0, 2.0, 3.5, float("inf")))
@pytest.mark.parametrize("rows", (1, 2, 7))
def test_pdist_and_triangle_indices_match_eager(compile_model, p, rows):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(rows, 5, generator=g)
    if rows > 2:
        x[2] = x[0]  # a zero distance
    ep, model = compile_model(PairDistances(p), (x,))
    for got, want in zip(model(x), ep.module()(x)):
        torch.testing.assert_close(got, want)


class Renorm(torch.nn.Module):
    def forward(self, x):
        return torch.renorm(x, 2, 0, 1.5), torch.renorm(x, 1, 1, 0.5)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float16, torch.bfloat16), ids=str)
def test_renorm_matches_eager(compile_model, dtype):
    x = (torch.randn(4, 6, generator=torch.Generator().manual_seed(3)) * 2).to(dtype)
    x[1] = 0.01  # a row under the max norm: left as it is
    ep, model = compile_model(Renorm(), (x,))
    for got, want in zip(model(x), ep.module()(x)):
        torch.testing.assert_close(got, want)
