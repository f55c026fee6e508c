"""nonzero_static against eager: a fixed number of rows, the first nonzero positions in
row-major order, then rows of the fill value; positions past the capacity are dropped."""
from __future__ import annotations

import torch


class NonzeroStatic(torch.nn.Module):
    def forward(self, x):
        return (torch.nonzero_static(x, size=4), torch.nonzero_static(x > 0.5, size=9,
                                                                        fill_value=7))


def test_nonzero_static_matches_eager(compile_model):
    g = torch.Generator().manual_seed(0)
    x = torch.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 0.25]])
    ep, model = compile_model(NonzeroStatic(), (x,))
    cases = [x, torch.zeros(2, 3), torch.ones(2, 3),  # none selected, more than the capacity
             *(torch.rand(2, 3, generator=g) * (torch.rand(2, 3, generator=g) > 0.4)
               for _ in range(4))]
    for x in cases:
        got, want = model(x), ep.module()(x)
        for a, b in zip(got, want):
            assert a.shape == b.shape
            torch.testing.assert_close(a, b)


def test_nonzero_static_of_zero_dim_input(compile_model):
    class Scalar(torch.nn.Module):
        def forward(self, x):
            return torch.nonzero_static(x, size=3)

    ep, model = compile_model(Scalar(), (torch.tensor(1.5),))
    for x in (torch.tensor(1.5), torch.tensor(0.0)):
        got, want = model(x), ep.module()(x)
        assert got.shape == want.shape == (3, 0)
        torch.testing.assert_close(got, want)
