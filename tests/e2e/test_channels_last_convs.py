"""Float32 convolution chains stored channels last (scheduler/layout.py): a MobileNet-shaped
network (a stem, depthwise 3x3 and 5x5 convolutions with strides, 1x1 ones with residuals,
ReLU6, hardswish, SiLU, a squeeze-and-excitation block, a pooled head) against eager on each
vector build this CPU can run, with the layouts the pass chose checked; what must stay
channels first does (a Winograd ResNet block, a convolution adding the network's input, an
output, a weight read elsewhere, a DenseNet-shaped network whose 1x1 convolutions feed
Winograd ones, the SSE2 build), and stays correct."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from aotc.ir.nodes import Conv
from aotc.passes.pipeline import compile_program
from aotc.target import target_for
from aotc.target.host import missing_features

nn = torch.nn


def vector_isas() -> list[str]:
    return [isa for isa in ("avx512", "avx2") if not missing_features(target_for(isa))]


def convs(ep, isa: str) -> list[Conv]:
    program = compile_program(ep, target_for(isa), build=False).program
    return [b.op for b in program.computed() if isinstance(b.op, Conv)]


def checked_convs(compile_model, module: nn.Module, shape, isa: str, seed: int) -> list[Conv]:
    """The convolutions compiled for `isa`, once the compiled module matched eager on a
    random input of `shape`."""
    torch.manual_seed(seed)
    x = torch.randn(shape)
    ep, model = compile_model(module, (x,), options={"isa": isa})
    torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)
    return convs(ep, isa)


def randomize(model: nn.Module) -> nn.Module:
    g = torch.Generator().manual_seed(3)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.rand(m.num_features, generator=g) - 0.5)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    return model


class Block(nn.Module):
    """An inverted residual: 1x1 expand, depthwise k x k, optional squeeze-excitation, 1x1
    project, the residual where the shape allows."""

    def __init__(self, cin, cout, k, stride, act, se=False):
        super().__init__()
        hidden = cin * 4
        self.expand = nn.Sequential(nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), act())
        self.dw = nn.Sequential(nn.Conv2d(hidden, hidden, k, stride, k // 2, groups=hidden),
                                nn.BatchNorm2d(hidden), act())
        self.se = (nn.Sequential(nn.Conv2d(hidden, 8, 1), nn.ReLU(), nn.Conv2d(8, hidden, 1),
                                 nn.Hardsigmoid()) if se else None)
        self.project = nn.Sequential(nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.dw(self.expand(x))
        if self.se is not None:
            y = y * self.se(y.mean((2, 3), keepdim=True))
        y = self.project(y)
        return x + y if self.residual else y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                                  nn.Hardswish())
        self.blocks = nn.Sequential(
            Block(16, 16, 3, 1, nn.ReLU6), Block(16, 24, 3, 2, nn.ReLU6),
            Block(24, 24, 5, 1, nn.Hardswish, se=True), Block(24, 40, 5, 2, nn.SiLU, se=True),
            Block(40, 40, 3, 1, nn.SiLU))
        self.head = nn.Linear(40, 10)
        randomize(self)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


@pytest.mark.parametrize("isa", vector_isas())
def test_mobilenet_runs_channels_last_and_matches_eager(compile_model, isa):
    ops = checked_convs(compile_model, Net(), (2, 3, 33, 31), isa, seed=0)
    stem, rest = ops[0], ops[1:]
    assert stem.out_channels_last and not stem.x_channels_last
    # every later convolution reads and writes channels last: depthwise, 1x1, the
    # squeeze-excitation's, the last one (pooled into the head down its columns)
    assert all(op.x_channels_last and op.out_channels_last for op in rest)
    assert all(op.weight_packed for op in ops if op.groups == 1)


@pytest.mark.parametrize("isa", vector_isas())
def test_dynamic_batch_and_size(compile_model, isa):
    torch.manual_seed(1)
    x = torch.randn(2, 3, 32, 32)
    dims = {"x": {0: torch.export.Dim("n", min=1, max=8), 2: torch.export.Dim("h", min=16, max=64)}}
    ep, model = compile_model(Net(), (x,), dynamic_shapes=dims, options={"isa": isa})
    for shape in ((1, 3, 17, 32), (5, 3, 40, 32)):
        y = torch.randn(shape)
        torch.testing.assert_close(model(y), ep.module()(y), rtol=1e-4, atol=1e-4)
    assert any(op.x_channels_last for op in convs(ep, isa))


def test_sse2_build_stays_channels_first(compile_model):
    ops = checked_convs(compile_model, Net(), (1, 3, 20, 20), "sse2", seed=2)
    assert not any(op.x_channels_last or op.out_channels_last for op in ops)


class Mixed(nn.Module):
    """What stays channels first: a 1x1 chain adding the network's input (the residual lies
    channels first), a Winograd 3x3 pair, a convolution that is an output, a weight also
    read by the graph."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(32, 64, 1)
        self.dw = nn.Conv2d(64, 64, 3, padding=1, groups=64)
        self.b = nn.Conv2d(64, 32, 1)
        self.c3 = nn.Conv2d(32, 32, 3, padding=1)
        self.d3 = nn.Conv2d(32, 32, 3, padding=1)
        self.e = nn.Conv2d(32, 16, 1)

    def forward(self, x):
        y = x + self.b(F.relu6(self.dw(F.relu6(self.a(x)))))
        z = F.relu(self.d3(F.relu(self.c3(y))))
        out = self.e(z)
        return out, out.sum() + self.e.weight.sum()


@pytest.mark.parametrize("isa", vector_isas())
def test_what_must_stay_channels_first_does(compile_model, isa):
    torch.manual_seed(3)
    x = torch.randn(2, 32, 24, 24)
    ep, model = compile_model(Mixed(), (x,), options={"isa": isa})
    got, want = model(x), ep.module()(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-3)
    a, dw, b, c3, d3, e = convs(ep, isa)
    assert a.out_channels_last and dw.x_channels_last
    # b's residual is the input, so b writes channels first; a 1x1 convolution that does
    # reads channels first too (its transposing store costs more than the packing of x)
    assert not (b.x_channels_last or b.out_channels_last or dw.out_channels_last)
    assert c3.weight_winograd and d3.weight_winograd
    assert not any(op.x_channels_last or op.out_channels_last for op in (c3, d3, e))


class Dense(nn.Module):
    """DenseNet-shaped: a 7x7 stem, a max pool, then layers of batch norm, ReLU, 1x1 and
    3x3 (Winograd) convolutions whose outputs are concatenated onto their inputs, a
    transition (1x1, average pool) and one more layer before the pooled head."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 7, 2, 3, bias=False), nn.BatchNorm2d(32),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        def layer(c):
            return nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, 64, 1, bias=False),
                                 nn.BatchNorm2d(64), nn.ReLU(),
                                 nn.Conv2d(64, 32, 3, padding=1, bias=False))
        self.layers = nn.ModuleList(layer(c) for c in (32, 64))
        self.transition = nn.Sequential(nn.BatchNorm2d(96), nn.ReLU(), nn.Conv2d(96, 48, 1),
                                        nn.AvgPool2d(2, 2))
        self.last = layer(48)
        randomize(self)

    def forward(self, x):
        x = self.stem(x)
        for layer in self.layers:
            x = torch.cat([x, layer(x)], 1)
        x = self.transition(x)
        return torch.cat([x, self.last(x)], 1).mean((2, 3))


@pytest.mark.parametrize("isa", vector_isas())
def test_densenet_stays_channels_first(compile_model, isa):
    # channels last would pay nowhere: the stem would write it for its max pool alone (from
    # columns, slower than the direct kernel), the 1x1 convolutions would store their
    # products transposed for the Winograd ones, the transition for its window pool
    ops = checked_convs(compile_model, Dense(), (2, 3, 64, 60), isa, seed=4)
    # the 3x3s on 16x15 planes; the last one's 8x7 plane is 16 tiles, with 32 output
    # channels too thin for Winograd (prepack.WINOGRAD_FEW_TILES_MIN_COUT): the packed GEMM
    assert sum(op.weight_winograd for op in ops) == 2
    assert [op.weight_packed for op in ops if op.kernel == (3, 3)] == [False, False, True]
    assert not any(op.x_channels_last or op.out_channels_last for op in ops)


class ThreeByThree(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


@pytest.mark.parametrize("isa", vector_isas())
@pytest.mark.parametrize("hw,cout,winograd", [((7, 7), 32, False), ((8, 8), 64, True),
                                              ((9, 9), 32, True), ((6, 6), 64, False)])
def test_winograd_on_small_planes(compile_model, isa, hw, cout, winograd):
    # 16 tiles of 2x2 (7x7, 8x8) take Winograd with 64 output channels or more, 25 (9x9)
    # with any, 9 (6x6) never; the others take the packed GEMM
    (op,) = checked_convs(compile_model, ThreeByThree(48, cout), (1, 48, *hw), isa, seed=5)
    assert op.weight_winograd == winograd
    assert op.weight_packed != winograd
