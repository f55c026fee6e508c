"""Pooling, padding, flips and scans against eager: shapes the OpInfo samples miss (large,
threaded, dynamic batch and length), and scans that give the same answer every run."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from models import Fn

Dim = torch.export.Dim


CASES = {
    "max_pool2d_indices_padded": (
        lambda x: F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True), (2, 3, 11, 12)),
    "max_pool2d_ceil_dilated": (
        lambda x: F.max_pool2d(x, 2, stride=2, dilation=2, ceil_mode=True), (2, 3, 9, 9)),
    "max_pool1d_indices": (lambda x: F.max_pool1d(x, 4, 3, 1, return_indices=True), (2, 5, 20)),
    "max_pool3d": (lambda x: F.max_pool3d(x, 2, return_indices=True), (1, 2, 4, 6, 5)),
    "avg_pool2d_exclude_pad_ceil": (
        lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        (2, 3, 10, 11)),
    "avg_pool2d_divisor": (lambda x: F.avg_pool2d(x, 2, divisor_override=3), (2, 3, 8, 8)),
    "avg_pool1d": (lambda x: F.avg_pool1d(x, 3, 2, 1), (2, 3, 15)),
    "avg_pool3d": (lambda x: F.avg_pool3d(x, (1, 2, 2)), (1, 2, 3, 6, 4)),
    "adaptive_avg_pool2d_uneven": (lambda x: F.adaptive_avg_pool2d(x, (3, 5)), (2, 3, 10, 11)),
    "adaptive_avg_pool2d_global": (lambda x: F.adaptive_avg_pool2d(x, 1), (2, 64, 7, 7)),
    "adaptive_max_pool2d_indices": (
        lambda x: F.adaptive_max_pool2d(x, (4, 3), return_indices=True), (2, 3, 9, 7)),
    "adaptive_max_pool1d": (lambda x: F.adaptive_max_pool1d(x, 5), (2, 3, 13)),
    "adaptive_avg_pool3d": (lambda x: F.adaptive_avg_pool3d(x, (2, 3, 1)), (1, 2, 5, 7, 3)),
    # max pooling without indices goes one pooled dim at a time (rows, then along rows)
    "max_pool2d_separable_dilated": (
        lambda x: F.max_pool2d(x, (3, 2), stride=(2, 1), padding=(1, 1), dilation=(1, 2)),
        (2, 3, 13, 14)),
    "max_pool2d_separable_ceil": (lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
                                  (1, 4, 10, 11)),
    "max_pool2d_separable_all_negative": (lambda x: F.max_pool2d(-x.abs() - 1, 3, 2, 1),
                                          (1, 2, 9, 8)),
    "max_pool3d_separable": (lambda x: F.max_pool3d(x, (2, 3, 2), stride=(1, 2, 2),
                                                    padding=(1, 1, 0)), (1, 2, 5, 7, 6)),
    "max_pool2d_one_pooled_dim": (lambda x: F.max_pool2d(x, (3, 1), (2, 1), (1, 0)),
                                  (2, 3, 9, 5)),
    "large_max_pool_threaded": (lambda x: F.max_pool2d(x, 3, 2, 1), (4, 32, 56, 56)),
    "pads": (lambda x: (F.pad(x, (1, 2, 3, 0)), F.pad(x, (2, 2, 1, 1), mode="reflect"),
                        F.pad(x, (3, -1, 0, 2), mode="replicate"),
                        F.pad(x, (1, 1, 2, 2), "circular")),
             (2, 3, 6, 7)),
    "flip_roll": (lambda x: (x.flip(0, -1), torch.fliplr(x), torch.roll(x, (2, -3), (1, 2)),
                             torch.roll(x, 5)), (3, 4, 5)),
    "cumsum_last_large": (lambda x: x.cumsum(-1), (64, 700)),
    "cumsum_middle": (lambda x: x.cumsum(1), (3, 50, 130)),
    "cumprod_first": (lambda x: (x * 0.1 + 1).cumprod(0), (40, 9)),
    "cumsum_of_bool": (lambda x: (x > 0).cumsum(-1), (5, 33)),
    "cumsum_to_float64": (lambda x: x.cumsum(0, dtype=torch.float64), (7, 3)),
    "cumsum_to_int64": (lambda x: (x * 10).cumsum(1, dtype=torch.int64), (7, 30)),
    "logcumsumexp_large": (lambda x: (x * 30).logcumsumexp(1), (20, 2000)),
    "cummax_cummin_ties": (lambda x: (x.round().cummax(1), x.round().cummin(0)), (40, 50)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_eager(compile_model, name):
    torch.manual_seed(0)
    fn, shape = CASES[name]
    x = torch.randn(shape)
    ep, model = compile_model(Fn(fn), (x,))
    torch.testing.assert_close(model(x), ep.module()(x))


def test_max_pool_one_dim_at_a_time_keeps_nan(compile_model):
    """A NaN reaches every window holding it through both passes of the separable max."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 13, 14)
    x[x > 1.5] = float("nan")
    fn = Fn(lambda v: F.max_pool2d(v, (3, 2), stride=(2, 1), padding=(1, 1), dilation=(1, 2)))
    ep, model = compile_model(fn, (x,))
    got, want = model(x), ep.module()(x)
    assert want.isnan().any() and not want.isnan().all()
    torch.testing.assert_close(got, want, equal_nan=True)


def test_integer_scans_wrap_like_torch(compile_model):
    x = torch.randint(-(2**40), 2**40, (3, 50))
    ep, model = compile_model(Fn(lambda x: (x.cumsum(1), x.cumprod(1), x.int().cumsum(0))), (x,))
    torch.testing.assert_close(model(x), ep.module()(x))


def pools_and_scans(x):
    # (max_pool1d itself specializes the length at export; its 2-d form does not)
    return (F.max_pool2d(x.unsqueeze(2), (1, 3), (1, 2), (0, 1), return_indices=True),
            F.avg_pool1d(x, 2), x.cumsum(-1),
            F.adaptive_avg_pool1d(x, 1), F.pad(x, (2, 1), mode="reflect"), x.flip(-1),
            torch.roll(x, 3, -1))


def pools_and_scans_shapes():
    return {"xs": ({0: Dim("b", max=32), 2: Dim("t", min=4, max=512)},)}


def test_dynamic_batch_and_length(compile_model):
    """Pools and scans whose sizes follow the bound batch and sequence length."""
    ep, model = compile_model(Fn(pools_and_scans), (torch.randn(2, 4, 16),),
                              dynamic_shapes=pools_and_scans_shapes())
    for shape in [(1, 4, 4), (3, 4, 17), (5, 4, 100)]:
        x = torch.randn(shape)
        torch.testing.assert_close(model(x), ep.module()(x))


def test_scan_is_the_same_every_run(compile_model):
    x = torch.randn(256, 300)
    ep, model = compile_model(Fn(lambda x: (x.cumsum(-1), x.cumsum(0))), (x,),
                              options={"num_threads": 2})
    first = model(x)
    torch.testing.assert_close(first, ep.module()(x))
    for _ in range(20):
        again = model(x)
        assert all(torch.equal(a, b) for a, b in zip(again, first))
