"""int64 convolutions (plain and transposed, 1-3 spatial dims): exact integer sums against
eager, on every OpInfo sample and on values too large for float32 to hold exactly."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.testing._internal.common_methods_invocations import op_db

import aotc
from aotc.tools.opsweep import Sample, check, export

OPS = ["nn.functional.conv1d", "nn.functional.conv2d", "nn.functional.conv3d",
       "nn.functional.conv_transpose1d", "nn.functional.conv_transpose2d",
       "nn.functional.conv_transpose3d"]


@pytest.mark.parametrize("name", OPS)
def test_every_opinfo_sample_int64(tmp_path, name):
    info = next(i for i in op_db if i.name == name and not i.variant_test_name)
    torch.manual_seed(0)
    samples = [Sample.of(k, s) for k, s in
               enumerate(info.sample_inputs_func(info, "cpu", torch.int64, False))]
    check(info, samples, export(info, samples), tmp_path)


class Convs(torch.nn.Module):
    def forward(self, x, w, b, wt):
        return (F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
                F.conv_transpose2d(x, wt, None, stride=(3, 2), padding=(1, 0),
                                   output_padding=(2, 1), groups=2, dilation=(2, 1)))


def test_exact_beyond_float_precision(tmp_path):
    big = 1 << 40  # products near 2**80 wrap as int64 does; sums of 2**40-sized terms stay exact
    torch.manual_seed(0)
    x = torch.randint(-9, 10, (2, 4, 7, 6)) * big + torch.randint(-5, 5, (2, 4, 7, 6))
    w = torch.randint(-3, 4, (6, 2, 3, 2))
    b = torch.randint(-big, big, (6,))
    wt = torch.randint(-3, 4, (4, 3, 2, 3))
    ep = torch.export.export(Convs(), (x, w, b, wt))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "c.pt2"))
    for got, want in zip(model(x, w, b, wt), ep.module()(x, w, b, wt)):
        assert got.dtype == want.dtype == torch.int64
        torch.testing.assert_close(got, want, rtol=0, atol=0)
