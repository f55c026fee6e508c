"""as_strided: a view with explicit strides over a whole buffer's elements, against eager;
refused (naming the op and line) over another view or past the tensor's end."""
from __future__ import annotations

import pytest
import torch

import aotc


class Strided(torch.nn.Module):
    def forward(self, x):
        y = x * 2  # a fresh contiguous result, viewed with overlapping windows
        return (torch.as_strided(x, (3, 4), (4, 1), 2), torch.as_strided(y, (5, 3), (2, 1)),
                torch.as_strided(x, (2, 2, 2), (1, 8, 3), 1))


def test_as_strided_matches_eager(compile_model):
    x = torch.randn(4, 4)
    ep, model = compile_model(Strided(), (x,))
    torch.testing.assert_close(model(x), ep.module()(x))


class OfView(torch.nn.Module):
    def forward(self, x):
        return torch.as_strided(x.t(), (2, 2), (1, 2))  # the line the error names


def test_as_strided_of_a_view_is_refused(tmp_path):
    ep = torch.export.export(OfView(), (torch.randn(4, 4),))
    with pytest.raises(aotc.UnsupportedOperatorError) as info:
        aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    msg = str(info.value)
    assert "as_strided" in msg and "of a view" in msg and "the line the error names" in msg
