"""Convolutions compiled by aotc against eager: every path of kernels/conv.cpp (depthwise,
pointwise, im2col, transposed), 1-3 spatial dims, each ISA build this CPU can run, dynamic
batch and image sizes, batch norm folding, and results that never change from run to run."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import aotc
from aotc.ir.nodes import Conv
from aotc.passes.pipeline import compile_program
from aotc.target import host_target
from isa_builds import runnable_isas
from models import Fn

KERNEL_DIR = Path(__file__).resolve().parents[2] / "src" / "aotc" / "kernels"
# torch's own note that it pads a copy of the input for padding='same' with an even kernel
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same'")
nn = torch.nn

CASES = {
    "3x3_pad": (lambda: nn.Conv2d(3, 8, 3, padding=1), (2, 3, 9, 9)),
    "depthwise_s2": (lambda: nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8), (2, 8, 9, 9)),
    "depthwise_multiplier": (lambda: nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=8),
                             (2, 8, 9, 9)),
    "depthwise_5x5_dilated": (lambda: nn.Conv2d(6, 6, 5, padding=4, dilation=2, groups=6),
                              (1, 6, 20, 37)),
    "depthwise_s3_wide": (lambda: nn.Conv2d(4, 4, (3, 7), stride=3, padding=(1, 3), groups=4),
                          (1, 4, 13, 40)),
    "depthwise_7x7_s2_no_bias": (lambda: nn.Conv2d(5, 5, 7, stride=2, padding=3, groups=5,
                                                   bias=False), (1, 5, 45, 39)),
    "depthwise_5x5_threaded": (lambda: nn.Conv2d(16, 16, 5, padding=2, groups=16),
                               (2, 16, 33, 35)),
    "depthwise_conv1d_multiplier": (lambda: nn.Conv1d(3, 6, 5, stride=2, padding=2, groups=3),
                                    (2, 3, 131)),
    # the channel-blocked kernel (multiplier 1): blocks of 16 (AVX-512) or 8 (AVX2) channels
    # with a partial last one, planes whose size is not a multiple of the block
    "depthwise_blocked_partial_block": (lambda: nn.Conv2d(37, 37, 3, padding=1, groups=37),
                                        (2, 37, 7, 7)),
    "depthwise_blocked_s2_odd": (lambda: nn.Conv2d(20, 20, 3, stride=2, padding=1, groups=20),
                                 (1, 20, 15, 13)),
    "depthwise_blocked_dilated_asymmetric": (
        lambda: nn.Conv2d(24, 24, (5, 3), stride=(1, 2), padding=(4, 0), dilation=(2, 3),
                          groups=24), (2, 24, 11, 17)),
    "depthwise_blocked_large_plane_threaded": (
        lambda: nn.Conv2d(33, 33, 3, stride=2, padding=1, groups=33, bias=False),
        (1, 33, 57, 58)),
    "depthwise_blocked_tiny_plane": (lambda: nn.Conv2d(9, 9, 3, padding=1, groups=9),
                                     (3, 9, 1, 2)),
    # planes of several bands of output rows (about 2048 positions each), the last one short
    "depthwise_blocked_bands": (lambda: nn.Conv2d(18, 18, 3, padding=1, groups=18),
                                (1, 18, 70, 40)),
    "depthwise_blocked_bands_dilated_s2": (
        lambda: nn.Conv2d(17, 17, (5, 3), stride=(2, 1), padding=(3, 1), dilation=(2, 1),
                          groups=17), (2, 17, 150, 90)),
    "depthwise_blocked_conv1d": (lambda: nn.Conv1d(18, 18, 5, stride=2, padding=2, groups=18),
                                 (2, 18, 41)),
    # even kernels, as many taps as a vector has lanes (AVX-512: 16, AVX2: 8)
    "depthwise_blocked_4x4_taps": (lambda: nn.Conv2d(17, 17, 4, padding=1, groups=17),
                                   (1, 17, 10, 9)),
    "depthwise_blocked_conv1d_8_taps": (lambda: nn.Conv1d(11, 11, 8, padding=3, groups=11),
                                        (2, 11, 30)),
    "pointwise": (lambda: nn.Conv2d(8, 16, 1), (2, 8, 5, 7)),
    "pointwise_groups_no_bias": (lambda: nn.Conv2d(8, 16, 1, groups=2, bias=False),
                                 (2, 8, 5, 7)),
    "grouped_asymmetric": (lambda: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(2, 0),
                                             dilation=(1, 2), groups=2), (2, 4, 11, 8)),
    "single_input_channel": (lambda: nn.Conv2d(1, 5, 3), (2, 1, 8, 8)),
    "conv1d_strided": (lambda: nn.Conv1d(3, 5, 5, stride=2, padding=2), (2, 3, 17)),
    "conv1d_same_dilated": (lambda: nn.Conv1d(4, 4, 3, padding="same", dilation=2), (2, 4, 17)),
    "conv1d_same_even_kernel": (lambda: nn.Conv1d(4, 4, 4, padding="same"), (2, 4, 17)),
    "conv1d_valid": (lambda: nn.Conv1d(4, 2, 4, padding="valid"), (2, 4, 17)),
    "conv3d": (lambda: nn.Conv3d(2, 4, 3, padding=1, stride=(1, 2, 2)), (1, 2, 5, 6, 7)),
    "conv3d_depthwise": (lambda: nn.Conv3d(3, 3, 3, padding=1, groups=3), (2, 3, 4, 5, 6)),
    "transposed_2x2_s2": (lambda: nn.ConvTranspose2d(8, 4, 2, stride=2), (2, 8, 5, 5)),
    "transposed_output_padding_groups": (
        lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
        (2, 4, 5, 6)),
    "transposed1d_dilated": (lambda: nn.ConvTranspose1d(4, 3, 5, stride=3, padding=2,
                                                        dilation=2), (2, 4, 7)),
    "transposed3d": (lambda: nn.ConvTranspose3d(2, 3, 3, stride=2), (1, 2, 3, 4, 3)),
    "unbatched": (lambda: nn.Conv2d(3, 4, 3), (3, 9, 9)),
    "large_threaded": (lambda: nn.Conv2d(32, 48, 3, padding=1), (2, 32, 30, 30)),
    # output planes of 256 positions or more: the blocked direct kernel (AVX-512, AVX2)
    "direct_7x7_s2_odd": (lambda: nn.Conv2d(3, 13, 7, stride=2, padding=3), (2, 3, 37, 41)),
    "direct_dilated_no_bias": (lambda: nn.Conv2d(5, 7, 3, padding=2, dilation=2, bias=False),
                               (1, 5, 17, 23)),
    "direct_grouped_mixed_strides": (lambda: nn.Conv2d(6, 9, (3, 5), stride=(2, 3),
                                                       padding=(1, 2), groups=3),
                                     (2, 6, 40, 50)),
    "direct_no_padding_channel_tail": (lambda: nn.Conv2d(8, 20, 3), (1, 8, 20, 21)),
    "direct_stride3_dilated": (lambda: nn.Conv2d(4, 5, 3, stride=3, padding=1, dilation=3),
                               (1, 4, 61, 59)),
    "direct_conv1d": (lambda: nn.Conv1d(4, 6, 5, stride=2, padding=1), (2, 4, 701)),
    # channels a multiple of 8 but not of 12: AVX-512 tiles of 8 channels x 3 vectors
    "direct_8x3_tiles": (lambda: nn.Conv2d(5, 16, 3, padding=1), (2, 5, 17, 19)),
    "direct_8x3_grouped_strided": (lambda: nn.Conv2d(6, 80, 3, stride=2, padding=1, groups=2),
                                   (1, 6, 40, 36)),
    # unit stride along rows: rows w + p apart, sharing their padding; the last output
    # column reads the next row's (or, with no padding above, the next channel's) first
    # columns
    "direct_shared_padding_strided_rows": (lambda: nn.Conv2d(5, 8, 3, stride=(2, 1),
                                                             padding=(1, 2)), (1, 5, 33, 29)),
    "direct_shared_padding_no_row_padding": (lambda: nn.Conv2d(6, 12, (1, 5), padding=(0, 2),
                                                               bias=False), (2, 6, 17, 30)),
    # stride 2 along rows: even and odd input columns split by permutes (AVX-512), with no
    # padding, an even padding, and rows of 2 vectors and a tail
    "direct_s2_no_padding_long_rows": (lambda: nn.Conv2d(4, 8, 3, stride=2), (1, 4, 35, 70)),
    "direct_s2_even_padding_odd_width": (lambda: nn.Conv2d(3, 8, 5, stride=2, padding=2),
                                         (2, 3, 60, 17)),
    # padding wider than the kernel's reach: rows keep both paddings
    "direct_padding_beyond_kernel": (lambda: nn.Conv2d(4, 6, 3, padding=3), (1, 4, 20, 21)),
    "small_planes_batched": (lambda: nn.Conv2d(64, 96, 3, padding=1, groups=2), (5, 64, 7, 7)),
}


@pytest.mark.parametrize("isa", runnable_isas())
@pytest.mark.parametrize("name", sorted(CASES))
def test_conv_matches_eager(compile_model, name, isa):
    torch.manual_seed(0)
    make, shape = CASES[name]
    x = torch.randn(shape)
    ep, model = compile_model(make(), (x,), options={"isa": isa})
    torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)


ACTIVATIONS = {
    "relu": F.relu,
    "relu6": F.relu6,
    "hardtanh": lambda y: F.hardtanh(y, -0.5, 0.5),
    "clamp_min": lambda y: y.clamp(min=0.1),
    "clamp_max": lambda y: y.clamp(max=0.2),
    "hardswish": F.hardswish,
}
# (path of kernels/conv.cpp, activation): the activation fuses into every path
FUSED = {
    "direct_relu": (lambda: nn.Conv2d(5, 14, 3, stride=2, padding=1), (2, 5, 40, 33), "relu"),
    "direct_relu6_no_bias": (lambda: nn.Conv2d(4, 7, 5, padding=2, bias=False), (1, 4, 19, 17),
                             "relu6"),
    "direct_clamp_max": (lambda: nn.Conv1d(3, 13, 3, padding=1), (2, 3, 300), "clamp_max"),
    "direct_8x3_relu6": (lambda: nn.Conv2d(3, 8, 3, padding=1), (1, 3, 20, 23), "relu6"),
    "depthwise_relu6": (lambda: nn.Conv2d(6, 6, 3, padding=1, groups=6), (2, 6, 9, 9), "relu6"),
    "depthwise_blocked_hardtanh": (lambda: nn.Conv2d(35, 35, 3, stride=2, padding=1, groups=35),
                                   (2, 35, 14, 14), "hardtanh"),
    "depthwise_blocked_bands_relu6": (lambda: nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16),
                                      (1, 16, 180, 100), "relu6"),
    "pointwise_hardtanh": (lambda: nn.Conv2d(6, 4, 1), (2, 6, 5, 5), "hardtanh"),
    "im2col_clamp_min": (lambda: nn.Conv2d(3, 8, 3, padding=1), (2, 3, 9, 9), "clamp_min"),
    "transposed_relu": (lambda: nn.ConvTranspose2d(4, 3, 2, stride=2), (2, 4, 5, 5), "relu"),
    # hardswish on every path (MobileNetV3's activation)
    "direct_hardswish": (lambda: nn.Conv2d(3, 16, 3, stride=2, padding=1), (1, 3, 40, 33),
                         "hardswish"),
    "direct_8x3_hardswish": (lambda: nn.Conv2d(3, 8, 3, padding=1), (1, 3, 20, 23), "hardswish"),
    "depthwise_hardswish": (lambda: nn.Conv2d(6, 6, 3, padding=1, groups=6), (2, 6, 9, 9),
                            "hardswish"),
    "depthwise_multiplier_hardswish": (lambda: nn.Conv2d(4, 8, 3, padding=1, groups=4),
                                       (2, 4, 19, 21), "hardswish"),
    "depthwise_blocked_bands_hardswish": (
        lambda: nn.Conv2d(20, 20, 5, stride=2, padding=2, groups=20), (1, 20, 180, 100),
        "hardswish"),
    "pointwise_hardswish": (lambda: nn.Conv2d(6, 4, 1), (2, 6, 5, 5), "hardswish"),
    "pointwise_packed_hardswish": (lambda: nn.Conv2d(200, 40, 1), (1, 200, 7, 7), "hardswish"),
    "im2col_hardswish": (lambda: nn.Conv2d(3, 8, 3, padding=1), (2, 3, 9, 9), "hardswish"),
    "winograd_hardswish": (lambda: nn.Conv2d(16, 24, 3, padding=1), (1, 16, 30, 30),
                           "hardswish"),
    "transposed_hardswish": (lambda: nn.ConvTranspose2d(4, 3, 2, stride=2), (2, 4, 5, 5),
                             "hardswish"),
}


@pytest.mark.parametrize("isa", runnable_isas())
@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_activation_matches_eager(compile_model, name, isa):
    torch.manual_seed(0)
    make, shape, act = FUSED[name]
    conv = make()
    x = torch.randn(shape)
    ep, model = compile_model(Fn(lambda v: ACTIVATIONS[act](conv(v))), (x,),
                              options={"isa": isa})
    torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)


def test_activation_fuses_into_the_convolution(compile_model):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.ReLU6())
    x = torch.randn(1, 3, 20, 20)
    ep, model = compile_model(m, (x,))
    torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)
    program = compile_program(ep, host_target(), build=False).program
    ops = [b.op for b in program.computed()]
    assert [type(op).__name__ for op in ops] == ["Conv", "Conv"]
    assert [(op.clamp_min, op.clamp_max) for op in ops] == [(0.0, None), (0.0, 6.0)]


def test_hardswish_fuses_into_the_convolution_after_its_residual(compile_model):
    """MobileNetV3's conv -> bn -> hardswish is one convolution, and a ReLU after it stays a
    pass of its own (one activation per convolution); hardswish of a residual sum is one
    convolution that adds the residual, then applies hardswish."""
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
    bn = nn.BatchNorm2d(8).eval()
    bn.running_var.uniform_(0.5, 2)
    x = torch.randn(2, 3, 20, 20) * 4
    ep, model = compile_model(Fn(lambda v: F.relu(F.hardswish(bn(conv(v))))), (x,))
    torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)
    ops = [b.op for b in compile_program(ep, host_target(), build=False).program.computed()]
    assert isinstance(ops[0], Conv) and ops[0].hardswish and ops[0].clamp_min is None
    assert len(ops) == 2 and not isinstance(ops[1], Conv)

    pointwise = nn.Conv2d(8, 8, 1)
    x, r = torch.randn(1, 8, 17, 19) * 4, torch.randn(1, 8, 17, 19) * 4
    ep, model = compile_model(Fn(lambda v, s: F.hardswish(pointwise(v) + s)), (x, r),
                              name="residual.pt2")
    torch.testing.assert_close(model(x, r), ep.module()(x, r), rtol=1e-4, atol=1e-4)
    ops = [b.op for b in compile_program(ep, host_target(), build=False).program.computed()]
    assert len(ops) == 1 and ops[0].residual is not None and ops[0].hardswish


def test_activation_of_a_convolution_read_twice_stays_correct(compile_model):
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3, padding=1)
    m = Fn(lambda x: (F.relu(conv(x)) + conv(x), F.relu(F.relu6(conv(x)))))
    x = torch.randn(2, 3, 17, 17)
    ep, model = compile_model(m, (x,))
    torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)


# (path, residual operand): y = relu(conv(x) + r) becomes one convolution
RESIDUAL = {
    "direct": (lambda: nn.Conv2d(6, 13, 3, padding=1), (2, 6, 19, 17)),
    "direct_strided": (lambda: nn.Conv2d(4, 5, 5, stride=2, padding=2), (1, 4, 37, 35)),
    "direct_8x3": (lambda: nn.Conv2d(4, 24 + 8, 3, padding=1), (1, 4, 18, 17)),
    "depthwise": (lambda: nn.Conv2d(7, 7, 3, padding=1, groups=7, bias=False), (2, 7, 11, 13)),
    "depthwise_blocked_bands": (lambda: nn.Conv2d(21, 21, 3, padding=1, groups=21),
                                (1, 21, 66, 64)),
    "depthwise_blocked": (lambda: nn.Conv2d(21, 21, 3, stride=2, padding=1, groups=21),
                          (2, 21, 13, 9)),
    "pointwise": (lambda: nn.Conv2d(6, 4, 1), (2, 6, 5, 5)),
    "pointwise_groups_large_plane": (lambda: nn.Conv2d(6, 10, 1, groups=2), (2, 6, 17, 18)),
    "im2col": (lambda: nn.Conv2d(3, 8, 3, padding=1), (2, 3, 9, 9)),
    "transposed": (lambda: nn.ConvTranspose2d(4, 3, 2, stride=2), (2, 4, 5, 5)),
}


@pytest.mark.parametrize("isa", runnable_isas())
@pytest.mark.parametrize("name", sorted(RESIDUAL))
def test_fused_residual_matches_eager(compile_model, name, isa):
    torch.manual_seed(0)
    make, shape = RESIDUAL[name]
    conv = make()
    x = torch.randn(shape)
    r = torch.randn(conv(x).shape)
    ep, model = compile_model(Fn(lambda v, s: (F.relu(conv(v) + s), s + conv(v * 2))), (x, r),
                              options={"isa": isa})
    torch.testing.assert_close(model(x, r), ep.module()(x, r), rtol=1e-4, atol=1e-4)


def test_residual_block_is_one_convolution_per_conv(compile_model):
    """conv -> bn -> relu -> conv -> bn, + x, relu: two convolutions, nothing else."""
    torch.manual_seed(0)
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8),
                                      nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1),
                                      nn.BatchNorm2d(8))
            for bn in (self.body[1], self.body[4]):
                bn.running_var.uniform_(0.5, 2)
                bn.running_mean.uniform_(-1, 1)

        def forward(self, x):
            return F.relu(self.body(x) + x)

    x = torch.randn(2, 8, 20, 20)
    ep, model = compile_model(Block(), (x,))
    torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)
    program = compile_program(ep, host_target(), build=False).program
    ops = [b.op for b in program.computed()]
    assert [type(op).__name__ for op in ops] == ["Conv", "Conv"]
    assert ops[0].residual is None and ops[1].residual is not None
    assert (ops[1].clamp_min, ops[1].clamp_max) == (0.0, None)


def test_inverted_residual_adds_into_the_blocks_last_convolution(compile_model):
    """A MobileNet block's input is the previous block's projection, which the block's first
    convolution reads too: x + body(x) fuses into body's last convolution, and no
    convolution is computed twice (both add operands are convolutions)."""
    torch.manual_seed(0)
    project = nn.Conv2d(4, 8, 1)
    body = nn.Sequential(nn.Conv2d(8, 16, 1), nn.ReLU6(), nn.Conv2d(16, 16, 3, padding=1,
                                                                    groups=16),
                         nn.ReLU6(), nn.Conv2d(16, 8, 1))

    def forward(v):
        x = project(v)
        return x + body(x)

    v = torch.randn(2, 4, 10, 9)
    ep, model = compile_model(Fn(forward), (v,))
    torch.testing.assert_close(model(v), ep.module()(v), rtol=1e-4, atol=1e-4)
    program = compile_program(ep, host_target(), build=False).program
    ops = [b.op for b in program.computed()]
    assert [type(op).__name__ for op in ops] == ["Conv"] * 4
    assert [op.residual is not None for op in ops] == [False, False, False, True]


def test_residual_add_of_a_convolution_read_before_it_is_not_fused(compile_model):
    """The add's only convolution is read by an op lowered before it: fusing would compute
    that convolution twice, so the add stays a pass of its own."""
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 3, 3, padding=1)

    def forward(x):
        y = conv(x)
        z = y * 2
        return z, y + x

    x = torch.randn(2, 3, 17, 17)
    ep, model = compile_model(Fn(forward), (x,))
    torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)
    program = compile_program(ep, host_target(), build=False).program
    convs = [b.op for b in program.computed() if type(b.op).__name__ == "Conv"]
    assert len(convs) == 1 and convs[0].residual is None


def test_residual_of_a_convolution_read_twice_stays_correct(compile_model):
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 3, 3, padding=1)
    m = Fn(lambda x: (conv(x) + x, conv(x) * 2, F.relu(conv(x)) + x))
    x = torch.randn(2, 3, 17, 17)
    ep, model = compile_model(m, (x,))
    torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("isa", runnable_isas())
def test_fused_activation_keeps_nan(compile_model, isa):
    conv = nn.Conv2d(2, 3, 3, padding=1)
    x = torch.randn(1, 2, 18, 18)
    x[0, 1, 5, 7] = float("nan")
    ep, model = compile_model(Fn(lambda v: F.relu6(conv(v))), (x,), options={"isa": isa})
    got, want = model(x), ep.module()(x)
    assert want.isnan().any()
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4, equal_nan=True)


@pytest.mark.parametrize("isa", runnable_isas())
def test_depthwise_fused_activation_keeps_nan(compile_model, isa):
    conv = nn.Conv2d(19, 19, 3, padding=1, groups=19)
    x = torch.randn(1, 19, 7, 9)
    x[0, 17, 3, 4] = float("nan")
    r = torch.randn(1, 19, 7, 9)
    ep, model = compile_model(Fn(lambda v, s: (F.relu6(conv(v)), F.relu6(conv(v) + s))), (x, r),
                              options={"isa": isa})
    got, want = model(x, r), ep.module()(x, r)
    assert want[0].isnan().any() and want[1].isnan().any()
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4, equal_nan=True)


def test_dynamic_batch_and_image_size(compile_model):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                      nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.Conv2d(8, 4, 1),
                      nn.ConvTranspose2d(4, 2, 2, stride=2))
    batch = torch.export.Dim("batch", max=64)
    h, w = torch.export.Dim("h", min=4, max=64), torch.export.Dim("w", min=4, max=64)
    ep, model = compile_model(m, (torch.randn(2, 3, 16, 16),),
                              dynamic_shapes={"input": {0: batch, 2: h, 3: w}})
    for shape in [(1, 3, 8, 8), (3, 3, 21, 20), (5, 3, 16, 17), (2, 3, 33, 32)]:
        x = torch.randn(shape)
        torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)


def test_dynamic_batch_and_image_size_depthwise_blocks(compile_model):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 24, 1), nn.Conv2d(24, 24, 3, stride=2, padding=1, groups=24),
                      nn.ReLU6(), nn.Conv2d(24, 24, 3, padding=1, groups=24))
    batch = torch.export.Dim("batch", max=64)
    h, w = torch.export.Dim("h", min=4, max=64), torch.export.Dim("w", min=4, max=64)
    ep, model = compile_model(m, (torch.randn(2, 3, 16, 16),),
                              dynamic_shapes={"input": {0: batch, 2: h, 3: w}})
    for shape in [(1, 3, 4, 5), (3, 3, 21, 20), (5, 3, 16, 17), (2, 3, 33, 32)]:
        x = torch.randn(shape)
        torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)


def test_batch_norm_folds_into_the_convolution(compile_model):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.BatchNorm2d(8))
    for bn in (m[1], m[4]):
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.data.uniform_(0.5, 2)
        bn.bias.data.uniform_(-1, 1)
    x = torch.randn(2, 3, 10, 10)
    ep, model = compile_model(m, (x,))
    torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)
    program = compile_program(ep, host_target(), build=False).program
    ops = {b.name: b.op for b in program.computed()}
    assert [type(op).__name__ for op in ops.values()].count("Conv") == 2
    # what the norms computed is in the convolutions' weights: no pointwise normalize left
    assert all(isinstance(ops[b.name], Conv) for b in program.computed()
               if b.origin and any("batch_norm" in t for t in b.origin.targets))


def test_batch_norm_of_a_convolution_read_twice_stays_correct(compile_model):
    torch.manual_seed(0)
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)
            self.bn.running_var.uniform_(0.5, 2)

        def forward(self, x):
            y = self.conv(x)
            return self.bn(y) + y

    m = Twice()
    x = torch.randn(2, 3, 8, 8)
    ep, model = compile_model(m, (x,))
    torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)


def test_same_result_every_run(compile_model):
    """Threaded paths (direct tiles, im2col rows, depthwise planes, col2im channels) give one
    answer."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.Conv2d(32, 32, 3, padding=1, groups=32),
                      nn.ConvTranspose2d(32, 8, 3, stride=2))
    x = torch.randn(3, 16, 24, 24)
    ep, model = compile_model(m, (x,), options={"num_threads": 2})
    first = model(x)
    torch.testing.assert_close(first, ep.module()(x), rtol=1e-4, atol=1e-4)
    for _ in range(20):
        assert torch.equal(model(x), first)


class SqueezeExcite(nn.Module):
    """A depthwise layer of one block of 16 channels over a plane of several bands of rows,
    then a squeeze-and-excitation gate whose 1x1 convolutions on one position read weights
    large enough (960 x 240) to be split between threads."""

    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.up = nn.Conv2d(16, 960, 1)
        self.reduce, self.expand = nn.Conv2d(960, 240, 1), nn.Conv2d(240, 960, 1)

    def forward(self, x):
        y = self.up(F.relu6(self.dw(x)))
        s = y.mean((2, 3), keepdim=True)
        return y * torch.sigmoid(self.expand(F.relu(self.reduce(s))))


def test_threads_split_one_channel_block_and_thin_products(tmp_path):
    """The depthwise kernel splits one block of channels by bands of rows between threads,
    and a product of one row splits its columns: each output is still summed by one thread
    in one order, so two threads give one thread's result, bit for bit, on every run."""
    torch.manual_seed(0)
    x = torch.randn(1, 16, 112, 112)
    ep = torch.export.export(SqueezeExcite().eval(), (x,))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "se.pt2")
    one = aotc.load_package(path, num_threads=1)(x)
    torch.testing.assert_close(one, ep.module()(x), rtol=1e-4, atol=1e-4)
    two = aotc.load_package(path, num_threads=2)
    for _ in range(5):
        assert torch.equal(two(x), one)


def test_float64_convolution_is_refused_by_name(compile_model):
    m = nn.Conv2d(2, 2, 3).double()
    with pytest.raises(aotc.errors.UnsupportedOperatorError, match="conv2d.*float64"):
        compile_model(m, (torch.randn(1, 2, 5, 5, dtype=torch.float64),))


def test_padding_modes_before_a_convolution(compile_model):
    """TF-style 'same' padding through F.pad, and the other pad modes."""
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3, stride=2)
    m = Fn(lambda x: (conv(F.pad(x, (0, 1, 0, 1))), F.pad(x, (2, 1, 1, 2), mode="reflect"),
                      F.pad(x, (2, 1, 1, 2), mode="replicate"),
                      F.pad(x, (2, 1, 1, 2), mode="circular"), F.pad(x, (-1, 2, 1, -2), value=3.5)))
    x = torch.randn(2, 3, 8, 9)
    ep, model = compile_model(m, (x,))
    torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not available")
@pytest.mark.parametrize("march", ["x86-64", "x86-64-v3", "x86-64-v4"])
def test_kernel_compiles_cleanly_for_every_target(tmp_path, march):
    res = subprocess.run(["g++", f"-march={march}", "-O2", "-fopenmp", "-std=c++17", "-Wall",
                          "-Wextra", "-Werror", "-I", str(KERNEL_DIR), "-c",
                          str(KERNEL_DIR / "conv.cpp"), "-o", str(tmp_path / "conv.o")],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
