"""tril_indices and triu_indices against eager: the positions of a triangle of a [row, col]
matrix, row by row, for offsets inside, above and below the diagonal."""
from __future__ import annotations

import pytest
import torch


class TriIndices(torch.nn.Module):
    def __init__(self, row, col, offset):
        super().__init__()
        self.args = (row, col, offset)

    def forward(self, x):
        return torch.tril_indices(*self.args) + x, torch.triu_indices(*self.args) + x


@pytest.mark.parametrize("row,col,offset", [(5, 4, 0), (4, 7, 2), (6, 3, -2), (3, 3, -5),
                                            (3, 3, 9), (0, 4, 0)])
def test_tri_indices_match_eager(compile_model, row, col, offset):
    x = torch.zeros((), dtype=torch.int64)
    ep, model = compile_model(TriIndices(row, col, offset), (x,))
    for got, want in zip(model(x), ep.module()(x)):
        assert got.shape == want.shape
        torch.testing.assert_close(got, want)
