"""unravel_index against eager, the empty shape included: its unbind of a dim of size 0
returns no tensors, which the importer lowers as an empty tuple."""
from __future__ import annotations

import torch


class Unravel(torch.nn.Module):
    def forward(self, x):
        return torch.unravel_index(x, (3, 4, 5)), torch.unravel_index(x[0], ()), x + 1


def test_unravel_index_matches_eager(compile_model):
    first = torch.tensor([[0, 59, 17], [23, 5, 40]])
    ep, model = compile_model(Unravel(), (first,))
    for x in (first, torch.tensor([[1, 2, 3], [58, 0, 30]])):
        got, want = model(x), ep.module()(x)
        assert len(got[1]) == len(want[1]) == 0
        for a, b in zip([*got[0], got[2]], [*want[0], want[2]]):
            torch.testing.assert_close(a, b)
