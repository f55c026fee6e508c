"""take against eager: x's elements in row-major order at flat positions (negative ones from
the end), in the index's shape; a position outside x is an input error."""
from __future__ import annotations

import pytest
import torch


class Take(torch.nn.Module):
    def forward(self, x, index):
        return torch.take(x, index), torch.take(x.t(), index)  # a view reads in its own order


def test_take_matches_eager(compile_model):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, generator=g)
    index = torch.tensor([[0, -1, 5], [11, -12, 5]])
    ep, model = compile_model(Take(), (x, index))
    for _ in range(3):
        for got, want in zip(model(x, index), ep.module()(x, index)):
            torch.testing.assert_close(got, want)
        x = torch.randn(3, 4, generator=g)
        index = torch.randint(-12, 12, (2, 3), generator=g)


def test_take_out_of_range_is_an_input_error(compile_model):
    from aotc.errors import InputError

    x = torch.randn(3, 4)
    ep, model = compile_model(Take(), (x, torch.tensor([[0, 1, 2], [3, 4, 5]])))
    with pytest.raises(InputError, match="index out of range"):
        model(x, torch.tensor([[0, 1, 2], [3, 4, 12]]))
