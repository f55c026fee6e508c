"""index_reduce (prod, mean, amax, amin; with and without x's own values) against eager:
repeated indices combine in order, positions no index names keep x's value."""
from __future__ import annotations

import pytest
import torch

REDUCTIONS = ("prod", "mean", "amax", "amin")


class IndexReduce(torch.nn.Module):
    def __init__(self, dim: int, include_self: bool):
        super().__init__()
        self.dim, self.include_self = dim, include_self

    def forward(self, x, index, source):
        return tuple(x.index_reduce(self.dim, index, source, r, include_self=self.include_self)
                     for r in REDUCTIONS)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float16])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_matches_eager(compile_model, dtype, include_self):
    g = torch.Generator().manual_seed(0)

    def make(*shape):
        if dtype.is_floating_point:
            return (torch.rand(*shape, generator=g) + 0.5).to(dtype)
        return torch.randint(-4, 5, shape, generator=g).to(dtype)

    # dim 1 of a [4, 6, 3] x, 9 source slices, positions 1 and 4 named several times,
    # position 5 never: it keeps x's value whatever include_self says
    x, source = make(4, 6, 3), make(4, 9, 3)
    index = torch.tensor([1, 4, 1, 0, 4, 2, 1, 3, 4])
    ep, model = compile_model(IndexReduce(1, include_self), (x, index, source))
    for seed in range(3):
        if seed:
            x, source = make(4, 6, 3), make(4, 9, 3)
            index = torch.randint(0, 6, (9,), generator=g)
        for got, want in zip(model(x, index, source), ep.module()(x, index, source)):
            torch.testing.assert_close(got, want)


def test_index_reduce_out_of_range_is_an_input_error(compile_model):
    from aotc.errors import InputError

    x, source = torch.ones(3, 2), torch.full((2, 2), 2.0)
    ep, model = compile_model(IndexReduce(0, True), (x, torch.tensor([0, 2]), source))
    with pytest.raises(InputError, match="index out of range"):
        model(x, torch.tensor([0, 3]), source)
