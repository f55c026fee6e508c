"""Convolutions whose weights are stored prepacked as the GEMM's B (one group, output planes
under 256 positions): against eager on every ISA build this CPU can run, with strides,
padding, dilation, 1x1, 1-D and 3-D, odd sizes, several K slices, fused residual and clamp,
a dynamic batch, and a weight swapped at run time."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

import aotc
from aotc.ir.nodes import Conv
from isa_builds import compiled_convs, runnable_isas
from models import Fn

nn = torch.nn

CASES = {
    "3x3_batched_odd": (lambda: nn.Conv2d(16, 24, 3, padding=1), (2, 16, 7, 9)),
    "s2_dilated": (lambda: nn.Conv2d(12, 10, 3, stride=2, padding=2, dilation=2),
                   (1, 12, 15, 13)),
    "pointwise": (lambda: nn.Conv2d(20, 33, 1), (3, 20, 3, 5)),
    "pointwise_strided": (lambda: nn.Conv2d(64, 9, 1, stride=2), (1, 64, 13, 13)),
    "asymmetric_no_bias": (lambda: nn.Conv2d(9, 17, (3, 1), stride=(1, 2), padding=(1, 0),
                                             bias=False), (2, 9, 5, 10)),
    "several_k_slices": (lambda: nn.Conv2d(96, 40, 3, padding=1), (1, 96, 6, 6)),
    "conv1d": (lambda: nn.Conv1d(8, 16, 5, padding=2), (2, 8, 37)),
    # im2col from a padded copy of each plane: stride 3 along rows, a dilated tap past
    # the padding, an even kernel
    "stride3_dilated_even_kernel": (lambda: nn.Conv2d(7, 11, (2, 4), stride=(2, 3),
                                                      padding=(1, 3), dilation=(3, 2)),
                                    (2, 7, 13, 17)),
    "conv1d_stride2_no_padding": (lambda: nn.Conv1d(5, 12, 3, stride=2), (1, 5, 30)),
    "conv3d": (lambda: nn.Conv3d(4, 8, 3, padding=1, stride=(1, 2, 1)), (1, 4, 4, 5, 6)),
}


def packed_convs(ep) -> list[Conv]:
    return [op for op in compiled_convs(ep) if op.weight_packed]


@pytest.mark.parametrize("isa", runnable_isas())
@pytest.mark.parametrize("name", sorted(CASES))
def test_packed_conv_matches_eager(compile_model, name, isa):
    torch.manual_seed(0)
    make, shape = CASES[name]
    x = torch.randn(shape)
    ep, model = compile_model(make(), (x,), options={"isa": isa})
    torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)
    assert len(packed_convs(ep)) == 1


@pytest.mark.parametrize("isa", runnable_isas())
def test_packed_conv_fuses_residual_and_clamp(compile_model, isa):
    torch.manual_seed(0)
    conv = nn.Conv2d(10, 12, 3, stride=2, padding=1)
    x = torch.randn(2, 10, 13, 11)
    r = torch.randn(conv(x).shape)
    x[1, 3, 4, 5] = float("nan")
    ep, model = compile_model(Fn(lambda v, s: (F.relu(conv(v) + s), F.relu6(conv(v * 2)))),
                              (x, r), options={"isa": isa})
    torch.testing.assert_close(model(x, r), ep.module()(x, r), rtol=1e-4, atol=1e-4,
                               equal_nan=True)
    ops = packed_convs(ep)
    assert {(op.residual is not None, op.clamp_max) for op in ops} == {(True, None), (False, 6.0)}


@pytest.mark.parametrize("isa", runnable_isas())
@pytest.mark.parametrize("cin, cout, batch, hw", [(200, 70, 3, 7), (200, 37, 1, 14),
                                                  (130, 16, 2, 9), (48, 21, 2, (5, 3))])
def test_packed_pointwise_transposing_store(compile_model, isa, cin, cout, batch, hw):
    """The transposing store of out^T blocks into the channel planes (vector transposes of
    L positions x L channels): planes that are not a multiple of the vector width, several
    images (blocks crossing from one image's plane into the next), channel counts with a
    partial last vector, the residual and the ReLU6 clamp, a NaN kept through the clamp."""
    torch.manual_seed(0)
    h, w = (hw, hw) if isinstance(hw, int) else hw
    conv = nn.Conv2d(cin, cout, 1)
    x = torch.randn(batch, cin, h, w)
    r = torch.randn(batch, cout, h, w)
    x[-1, 1, h - 1, w - 1] = float("nan")
    ep, model = compile_model(Fn(lambda v, s: (F.relu6(conv(v) + s), F.relu6(conv(v * 2)),
                                               conv(v - 1))),
                              (x, r), options={"isa": isa})
    torch.testing.assert_close(model(x, r), ep.module()(x, r), rtol=1e-4, atol=1e-4,
                               equal_nan=True)
    assert len(packed_convs(ep)) == 3


def test_large_planes_groups_and_thin_weights_keep_their_paths():
    """The direct kernel (planes of 256 positions or more), grouped convolutions and a 1x1
    with fewer input channels than positions read the weight as given."""
    m = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1, groups=2))
    ep = torch.export.export(m.eval(), (torch.randn(1, 8, 16, 16),))
    assert packed_convs(ep) == []
    ep = torch.export.export(nn.Conv2d(8, 16, 1).eval(), (torch.randn(1, 8, 9, 9),))
    assert packed_convs(ep) == []


def test_packed_conv_with_dynamic_batch(compile_model):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 8, 1))
    batch = torch.export.Dim("batch", max=16)
    ep, model = compile_model(m, (torch.randn(2, 8, 4, 4),),
                              dynamic_shapes={"input": {0: batch}})
    assert len(packed_convs(ep)) == 2
    for n in (1, 3, 7):
        x = torch.randn(n, 8, 4, 4)
        torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("user_managed", [False, True])
def test_swapped_packed_weight_equals_a_fresh_compile(tmp_path, user_managed):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 8, 1)).eval()
    x = torch.randn(2, 8, 4, 4)
    with torch.no_grad():
        ep = torch.export.export(m, (x,))
        model = aotc.load_package(aotc.compile_and_package(ep, tmp_path / "a.pt2"))
        new = copy.deepcopy(m)
        for t in new.state_dict().values():
            t.mul_(0.5 + torch.rand_like(t))
        fresh = aotc.load_package(aotc.compile_and_package(
            torch.export.export(new, (x,)), tmp_path / "b.pt2"))
        model.load_constants({k: v.clone() for k, v in new.state_dict().items()},
                             user_managed=user_managed)
        torch.testing.assert_close(model(x), fresh(x), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(model(x), new(x), rtol=1e-4, atol=1e-4)
