"""repeat_interleave with a tensor of repeats: the output length is the sum of the repeats,
known only at run time, so one package serves every repeats; against eager."""
from __future__ import annotations

import pytest
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
    torch.testing.assert_close(model(x, r), ep.module()(x, r))
    r = torch.tensor([0, 6, 0])
    torch.testing.assert_close(model(x, r), ep.module()(x, r))


class Int32Repeats(torch.nn.Module):
    def forward(self, x, r):
        return torch.repeat_interleave(r), torch.repeat_interleave(x, r, dim=0)


def test_int32_repeats_keep_their_dtype(tmp_path):
    """repeat_interleave(repeats) returns the repeats' dtype (int32 here), as eager does."""
    x, r = torch.arange(6, dtype=torch.int16).reshape(3, 2), torch.tensor([1, 2, 3],
                                                                          dtype=torch.int32)
    ep = torch.export.export(Int32Repeats(), (x, r))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "r.pt2"))
    for reps in (r, torch.tensor([0, 4, 1], dtype=torch.int32)):
        got, want = model(x, reps), ep.module()(x, reps)
        assert got[0].dtype == want[0].dtype == torch.int32
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.uint8])
def test_narrow_int_repeats_are_refused_as_eager_refuses_them(tmp_path, dtype):
    r = torch.tensor([1, 2, 3], dtype=dtype)
    with pytest.raises(NotImplementedError):  # eager's CPU kernel has no such dtype
        torch.repeat_interleave(r)
    ep = torch.export.export(Int32Repeats(), (torch.randn(3, 2), r))
    with pytest.raises(aotc.CompileError, match="takes int32 or int64 repeats"):
        aotc.compile_and_package(ep, package_path=tmp_path / "r.pt2")
