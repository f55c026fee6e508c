"""segment_reduce over lengths and offsets (data, read at run time): every reduction, with and
without an initial value, empty segments, NaN, a leading batch axis; against eager."""
from __future__ import annotations

import pytest
import torch

import aotc

REDUCTIONS = ("sum", "mean", "max", "min", "prod")


class AllReductions(torch.nn.Module):
    def __init__(self, by: str, axis: int):
        super().__init__()
        self.by, self.axis = by, axis

    def forward(self, x, bounds):
        out = []
        for reduce in REDUCTIONS:
            for initial in (None, 2.5):
                out.append(torch.segment_reduce(x, reduce, axis=self.axis, initial=initial,
                                                **{self.by: bounds}))
        return tuple(out)


CASES = {
    # data, segment lengths along `axis` (one row per leading index when axis > 0)
    "axis0": (torch.randn(7, 3), torch.tensor([2, 0, 4, 1, 0]), 0),
    "axis1": (torch.randn(2, 6, 2), torch.tensor([[0, 3, 3], [1, 0, 5]]), 1),
}


@pytest.mark.parametrize("by", ["lengths", "offsets"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_segment_reduce_matches_eager(tmp_path, by, case):
    x, lengths, axis = CASES[case]
    x = x.clone()
    x.view(-1)[3] = float("nan")
    bounds = lengths if by == "lengths" else torch.cat(
        [torch.zeros(lengths.shape[:-1] + (1,), dtype=lengths.dtype), lengths.cumsum(-1)], -1)
    ep = torch.export.export(AllReductions(by, axis), (x, bounds))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "s.pt2"))
    torch.testing.assert_close(model(x, bounds), ep.module()(x, bounds), equal_nan=True)
    other = lengths.flip(-1)  # other segments, same program: the bounds are read at run time
    bounds = other if by == "lengths" else torch.cat(
        [torch.zeros(other.shape[:-1] + (1,), dtype=other.dtype), other.cumsum(-1)], -1)
    torch.testing.assert_close(model(x, bounds), ep.module()(x, bounds), equal_nan=True)
