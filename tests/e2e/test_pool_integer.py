"""int64 average pooling (a sum divided with truncation toward zero, as eager's integer
kernel) and local_response_norm of int64, against eager."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.testing._internal.common_methods_invocations import op_db

import aotc
from aotc.tools.opsweep import Sample, check, export

OPS = ["nn.functional.avg_pool1d", "nn.functional.avg_pool2d", "nn.functional.avg_pool3d",
       "nn.functional.local_response_norm"]


@pytest.mark.parametrize("name", OPS)
def test_every_opinfo_sample_int64(tmp_path, name):
    info = next(i for i in op_db if i.name == name)
    torch.manual_seed(0)
    samples = [Sample.of(k, s) for k, s in
               enumerate(info.sample_inputs_func(info, "cpu", torch.int64, False))]
    check(info, samples, export(info, samples), tmp_path)


class Pools(torch.nn.Module):
    def forward(self, x):
        return (F.avg_pool1d(x, 3, stride=2, padding=1),
                F.avg_pool1d(x, 3, stride=2, padding=1, count_include_pad=False),
                F.avg_pool2d(x[:, None], (1, 4), ceil_mode=True, divisor_override=3),
                F.avg_pool3d(x[:, None, None], (1, 1, 2)))


def test_negative_sums_truncate_toward_zero(tmp_path):
    x = torch.tensor([[[-3, 0, 5, 2, -7, -1, 4, -6, 9]]])
    ep = torch.export.export(Pools(), (x,))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "p.pt2"))
    got, want = model(x), ep.module()(x)
    assert (F.avg_pool1d(x, 3, stride=2, padding=1) < 0).any()  # the case that matters
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == torch.int64
        torch.testing.assert_close(g, w, rtol=0, atol=0)
