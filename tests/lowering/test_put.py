"""put (flat positions into x, negative ones from the end; accumulate or not) against
eager: repeated positions resolve in index order, the last write wins or each adds."""
from __future__ import annotations

import pytest
import torch


class Put(torch.nn.Module):
    def forward(self, x, index, source):
        return x.put(index, source), x.put(index, source, accumulate=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16])
def test_put_matches_eager(compile_model, dtype):
    g = torch.Generator().manual_seed(0)

    def make(*shape):
        return (torch.randn(*shape, generator=g) * 4).to(dtype)

    # a [2, 3] index into the 12 elements of a [3, 4] x, with repeats and negative positions
    index = torch.tensor([[5, -1, 0], [5, 11, -7]])
    x, source = make(3, 4), make(6)
    ep, model = compile_model(Put(), (x, index, source))
    for seed in range(3):
        if seed:
            x, source = make(3, 4), make(6)
            index = torch.randint(-12, 12, (2, 3), generator=g)
        for got, want in zip(model(x, index, source), ep.module()(x, index, source)):
            torch.testing.assert_close(got, want)


def test_put_repeated_positions_last_wins(compile_model):
    x, source = torch.zeros(2, 2), torch.tensor([1.0, 2.0, 3.0, 4.0])
    index = torch.tensor([3, -1, 3, 0])
    ep, model = compile_model(Put(), (x, index, source))
    put, acc = model(x, index, source)
    want_put, want_acc = ep.module()(x, index, source)
    torch.testing.assert_close(put, want_put)
    torch.testing.assert_close(acc, want_acc)
    assert put[1, 1] == 3.0 and acc[1, 1] == 6.0


def test_put_out_of_range_is_an_input_error(compile_model):
    from aotc.errors import InputError

    x, source = torch.zeros(2, 2), torch.ones(2)
    ep, model = compile_model(Put(), (x, torch.tensor([0, 3]), source))
    with pytest.raises(InputError, match="index out of range"):
        model(x, torch.tensor([0, 4]), source)
    with pytest.raises(InputError, match="index out of range"):
        model(x, torch.tensor([-5, 0]), source)
