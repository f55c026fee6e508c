"""as_strided_scatter against eager: the elements a strided view of x's row-major storage
reaches take src's values; an overlapping view is refused at compile time (export itself
refuses one reaching past x)."""
from __future__ import annotations

import pytest
import torch

from aotc.errors import UnsupportedOperatorError


class StridedScatter(torch.nn.Module):
    def __init__(self, size, stride, offset):
        super().__init__()
        self.size, self.stride, self.offset = size, stride, offset

    def forward(self, x, src):
        return torch.as_strided_scatter(x * 2, src, self.size, self.stride, self.offset)


@pytest.mark.parametrize("size,stride,offset", [
    ((2, 3), (1, 2), 1),        # a transposed, strided window of a [4, 4] x
    ((2, 2, 2), (8, 1, 4), 2),  # axes out of stride order
    ((3,), (5,), 0),            # a diagonal
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_as_strided_scatter_matches_eager(compile_model, size, stride, offset, dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 4, generator=g).to(dtype)
    src = torch.randn(*size, generator=g).to(dtype)
    ep, model = compile_model(StridedScatter(size, stride, offset), (x, src))
    for _ in range(2):
        torch.testing.assert_close(model(x, src), ep.module()(x, src))
        x = torch.randn(4, 4, generator=g).to(dtype)
        src = torch.randn(*size, generator=g).to(dtype)


def test_as_strided_scatter_refuses_overlapping_views():
    import aotc

    x, src = torch.zeros(4, 4), torch.ones(2, 2)
    ep = torch.export.export(StridedScatter((2, 2), (1, 1), 0), (x, src))
    with pytest.raises(UnsupportedOperatorError, match="overlap"):
        aotc.compile_and_package(ep)
