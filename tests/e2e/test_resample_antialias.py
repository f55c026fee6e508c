"""Anti-aliased bilinear resizing (interpolate(..., antialias=True)): the widened triangle
filter's taps and normalized weights as tables, width then height, against eager."""
from __future__ import annotations

import torch
import torch.nn.functional as F

import aotc

CASES = [((17, 13), dict(size=(5, 29))), ((17, 13), dict(size=(40, 3))),
         ((9, 30), dict(size=(4, 7), align_corners=True)),
         ((9, 30), dict(scale_factor=(0.3, 1.7))), ((8, 8), dict(size=(8, 8)))]


class Resize(torch.nn.Module):
    def forward(self, x):
        return tuple(F.interpolate(x[..., :h, :w], mode="bilinear", antialias=True, **kw)
                     for (h, w), kw in CASES)


def test_antialiased_bilinear_matches_eager(tmp_path):  # eager has float32 only
    torch.manual_seed(0)
    x = torch.randn(2, 3, 17, 30)
    ep = torch.export.export(Resize(), (x,))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "a.pt2"))
    torch.testing.assert_close(model(x), ep.module()(x))
