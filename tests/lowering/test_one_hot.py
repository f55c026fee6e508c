"""one_hot against eager: a 1 at each element's class; a class outside [0, C) is an input
error."""
from __future__ import annotations

import pytest
import torch


class OneHot(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.one_hot(x, 6)


def test_one_hot_matches_eager(compile_model):
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 6, (3, 4), generator=g)
    ep, model = compile_model(OneHot(), (x,))
    for _ in range(3):
        torch.testing.assert_close(model(x), ep.module()(x))
        x = torch.randint(0, 6, (3, 4), generator=g)


@pytest.mark.parametrize("bad", [6, -1])
def test_one_hot_class_out_of_range_is_an_input_error(compile_model, bad):
    from aotc.errors import InputError

    x = torch.zeros(3, 4, dtype=torch.int64)
    ep, model = compile_model(OneHot(), (x,))
    x[1, 2] = bad
    with pytest.raises(InputError, match="index out of range"):
        model(x)
