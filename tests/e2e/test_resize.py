"""resize_ and resize_as_ of a local tensor: its first elements in storage order under the
new sizes, as eager; growing one (uninitialized elements) is refused with a typed error."""
from __future__ import annotations

import pytest
import torch

import aotc
from aotc.errors import UnsupportedOperatorError


class Shrink(torch.nn.Module):
    def forward(self, x, t):
        y = (x * 2).resize_(3, 2)
        z = (x + 1).resize_as_(t)
        w = x.clone()
        w.resize_(2, 2, 5)
        return y + 1, z, w.sum(1)


def test_resize_keeps_the_first_elements(tmp_path):
    x, t = torch.randn(4, 5), torch.randn(7)
    ep = torch.export.export(Shrink(), (x, t))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "r.pt2"))
    torch.testing.assert_close(model(x, t), ep.module()(x, t))


def test_growing_is_refused(tmp_path):
    class Grow(torch.nn.Module):
        def forward(self, x):
            return x.clone().resize_(5, 5)

    ep = torch.export.export(Grow(), (torch.randn(2, 3),))
    with pytest.raises(UnsupportedOperatorError, match="uninitialized"):
        aotc.compile_and_package(ep, package_path=tmp_path / "g.pt2")
