"""grid_sample and bicubic resizing against eager: every mode and padding mode, dynamic sizes,
grids reaching outside the input, and the error for what is not lowered."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import aotc

Dim = torch.export.Dim


class GridSamples(torch.nn.Module):
    def __init__(self, align_corners: bool):
        super().__init__()
        self.align = align_corners

    def forward(self, x, grid):
        return tuple(F.grid_sample(x, grid, mode=mode, padding_mode=pad,
                                   align_corners=self.align)
                     for mode in ("bilinear", "nearest", "bicubic")
                     for pad in ("zeros", "border", "reflection"))


def _grid(b, h, w, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, h, w, 2, generator=g) * 2.6 - 1.3  # a margin outside [-1, 1]


@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_2d_dynamic(compile_model, align_corners):
    x, grid = torch.randn(2, 3, 7, 9), _grid(2, 5, 6, 0)
    b, h, w = Dim("b", max=8), Dim("h", min=2, max=32), Dim("w", min=2, max=32)
    ep, model = compile_model(GridSamples(align_corners), (x, grid),
                              {"x": {0: b, 2: Dim("ih", min=2, max=32), 3: Dim("iw", min=2, max=32)},
                               "grid": {0: b, 1: h, 2: w}})
    for n, ih, iw, oh, ow in ((2, 7, 9, 5, 6), (1, 4, 11, 9, 3), (3, 16, 5, 8, 8)):
        args = (torch.randn(n, 3, ih, iw), _grid(n, oh, ow, ih))
        torch.testing.assert_close(model(*args), ep.module()(*args))


class GridSample3d(torch.nn.Module):
    def forward(self, x, grid):
        return (F.grid_sample(x, grid, "bilinear", "reflection", align_corners=False),
                F.grid_sample(x, grid, "nearest", "zeros", align_corners=True))


def test_grid_sample_3d(compile_model):
    g = torch.Generator().manual_seed(3)
    x, grid = torch.randn(2, 2, 4, 5, 6), torch.rand(2, 3, 4, 5, 3, generator=g) * 2.4 - 1.2
    ep, model = compile_model(GridSample3d(), (x, grid))
    torch.testing.assert_close(model(x, grid), ep.module()(x, grid))


class Bicubic(torch.nn.Module):
    def forward(self, x):
        return (F.interpolate(x, size=(11, 5), mode="bicubic", align_corners=True),
                F.interpolate(x, scale_factor=1.7, mode="bicubic", align_corners=False),
                F.interpolate(x.half(), scale_factor=0.6, mode="bicubic"))


def test_bicubic_upsample_with_dynamic_batch(compile_model):
    ep, model = compile_model(Bicubic(), (torch.randn(2, 3, 6, 8),),
                              {"x": {0: Dim("b", max=8)}})
    for n in (2, 5):
        x = torch.randn(n, 3, 6, 8)
        torch.testing.assert_close(model(x), ep.module()(x))


class DynamicBicubic(torch.nn.Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=2.0, mode="bicubic")  # the line the error names


def test_bicubic_of_dynamic_size_is_refused_with_its_source_line(tmp_path):
    ep = torch.export.export(DynamicBicubic(), (torch.randn(1, 2, 6, 6),),
                             dynamic_shapes={"x": {2: Dim("h", min=2, max=64)}})
    with pytest.raises(aotc.UnsupportedOperatorError) as info:
        aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    msg = str(info.value)
    assert "upsample_bicubic2d" in msg and "dynamic dim" in msg
    assert "test_resample.py:" in msg and "mode=\"bicubic\")  # the line the error names" in msg
