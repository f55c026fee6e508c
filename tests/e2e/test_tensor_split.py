"""tensor_split by a tensor of indices: piece bounds read from the data at run time
(negative, past the end, decreasing), from an input or computed, against eager."""
from __future__ import annotations

import torch

import aotc


class Split(torch.nn.Module):
    def forward(self, x, idx):
        a, b, c = torch.tensor_split(x, idx, dim=1)
        d, e = torch.tensor_split(x, idx.abs().max(0, keepdim=True)[0] - 1)  # computed bounds
        return a * 2, b, c.sum(1), d, e


def test_pieces_follow_the_indices(tmp_path):
    x, idx = torch.randn(5, 7), torch.tensor([1, 4])
    ep = torch.export.export(Split(), (x, idx))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "t.pt2"))
    for i in ([1, 4], [-2, 9], [5, 2], [0, 0], [-9, -1]):
        idx = torch.tensor(i)
        got, want = model(x, idx), ep.module()(x, idx)
        assert [g.shape for g in got] == [w.shape for w in want], i
        torch.testing.assert_close(got, want)
