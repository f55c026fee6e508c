"""repeat_interleave with a tensor of repeats: the output length is the sum of the repeats,
known only at run time, so one package serves every repeats; against eager."""
from __future__ import annotations

import torch

import aotc


class Repeats(torch.nn.Module):
    def forward(self, x, r, r1):
        y = torch.repeat_interleave(x, r, dim=0)
        return (y * 2 + 1, torch.repeat_interleave(r), torch.repeat_interleave(x, r1),
                torch.repeat_interleave(x, r1, dim=1).sum(1))


def test_output_length_follows_the_repeats(tmp_path):
    x, r, r1 = torch.randn(4, 3), torch.tensor([1, 0, 3, 2]), torch.tensor([2])
    ep = torch.export.export(Repeats(), (x, r, r1))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "r.pt2"))
    torch.testing.assert_close(model(x, r, r1), ep.module()(x, r, r1))
    for r, r1 in ((torch.tensor([0, 5, 0, 1]), torch.tensor([3])),
                  (torch.tensor([0, 0, 0, 0]), torch.tensor([0]))):
        got, want = model(x, r, r1), ep.module()(x, r, r1)
        assert got[0].shape == want[0].shape
        torch.testing.assert_close(got, want)


def test_output_size_given(tmp_path):
    class M(torch.nn.Module):
        def forward(self, x, r):
            return torch.repeat_interleave(x, r, dim=1, output_size=6)

    x, r = torch.arange(12).reshape(4, 3), torch.tensor([3, 1, 2])
    ep = torch.export.export(M(), (x, r))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "r.pt2"))
    assert torch.equal(model(x, r), ep.module()(x, r))
    assert torch.equal(model(x, torch.tensor([0, 6, 0])), ep.module()(x, torch.tensor([0, 6, 0])))
