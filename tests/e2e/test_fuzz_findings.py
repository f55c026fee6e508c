"""Defects the random programs found, each as a small program against ep.module()."""
from __future__ import annotations

import pytest
import torch
from torch.export import Dim


class PrefixViews(torch.nn.Module):
    """Outputs that are prefix views of an intermediate: the identity index of the buffer,
    fewer rows (or columns) than it has."""

    def forward(self, x):
        y = x * 2
        return (y[:2], y.narrow(0, 0, 1), (x - x).narrow(0, 0, 2),
                torch.stack([x, x]).narrow(0, 0, 1),
                y[:2].sort(-1).values, y[:2].cumsum(0))


@pytest.mark.parametrize("dynamic", [False, True])
def test_prefix_views_keep_their_sizes(compile_model, dynamic):
    shapes = ({1: Dim("n", min=0, max=33)},) if dynamic else None
    ep, model = compile_model(PrefixViews(), (torch.randn(3, 5),), shapes)
    for n in ((5, 0, 1, 33) if dynamic else (5,)):
        x = torch.randn(3, n)
        torch.testing.assert_close(model(x), ep.module()(x))


class FloatThroughInt(torch.nn.Module):
    def forward(self, x):
        i = x.to(torch.int64)
        return torch.atan2(i, x), i.to(torch.float32), x.to(torch.int32).double()


def test_a_float_through_an_int_is_a_positive_zero(compile_model):
    # g++ folds float(int(v)) into trunc(v), whose -0.0 for v in (-1, 0) atan2 tells apart
    x = torch.tensor([-0.3, 0.4, -2.5, -0.9, 0.0, -1e-8, 7.5] * 3)
    ep, model = compile_model(FloatThroughInt(), (x,))
    out, want = model(x), ep.module()(x)
    torch.testing.assert_close(out, want)
    for o, w in zip(out[1:], want[1:]):
        assert torch.equal(torch.signbit(o), torch.signbit(w))
