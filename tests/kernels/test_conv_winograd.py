"""3x3 stride-1 convolutions on the kernel's Winograd F(2x2, 3x3) path (weights stored as
their transform, conv_winograd.h): against eager on every ISA build this CPU can run, with
odd planes (a partial last tile), padding 0, 1, 2 and asymmetric, channel counts that are
not a multiple of the vector width, rows of several vectors of tiles, fused bias, residual
and clamp, NaN inputs, several images, dynamic image sizes, and a weight swapped at run
time (repacked by the model library) in both runtimes."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import aotc
from aotc.ir.nodes import Conv, PackedConvWinograd
from aotc.scheduler.prepack import pack_winograd
from isa_builds import compiled_convs, runnable_isas
from models import Fn

nn = torch.nn

CASES = {
    "resnet_like": (lambda: nn.Conv2d(32, 32, 3, padding=1), (2, 32, 14, 14)),
    "odd_plane_channel_tails": (lambda: nn.Conv2d(33, 40, 3, padding=1), (1, 33, 13, 11)),
    "no_padding": (lambda: nn.Conv2d(32, 36, 3), (1, 32, 17, 18)),
    "padding_2_no_bias": (lambda: nn.Conv2d(34, 32, 3, padding=2, bias=False), (1, 34, 9, 10)),
    "asymmetric_padding": (lambda: nn.Conv2d(32, 48, 3, padding=(1, 0)), (2, 32, 12, 21)),
    "long_rows": (lambda: nn.Conv2d(32, 32, 3, padding=1), (1, 32, 6, 75)),
    "tall_and_threaded": (lambda: nn.Conv2d(64, 64, 3, padding=1), (1, 64, 57, 23)),
}


def winograd_convs(ep) -> list[Conv]:
    return [op for op in compiled_convs(ep) if op.weight_winograd]


# every case on the first (widest) build this CPU runs; on the others, the cases whose
# vector code has tails (a partial last vector of tiles, of channels, of columns)
TAILS = ("odd_plane_channel_tails", "long_rows")


@pytest.mark.parametrize("name, isa", [(name, isa) for k, isa in enumerate(runnable_isas())
                                       for name in sorted(CASES) if k == 0 or name in TAILS])
def test_winograd_conv_matches_eager(compile_model, name, isa):
    torch.manual_seed(0)
    make, shape = CASES[name]
    x = torch.randn(shape)
    ep, model = compile_model(make(), (x,), options={"isa": isa})
    torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)
    assert len(winograd_convs(ep)) == 1


@pytest.mark.parametrize("isa", runnable_isas())
def test_winograd_fuses_residual_and_clamp(compile_model, isa):
    torch.manual_seed(0)
    conv = nn.Conv2d(40, 35, 3, padding=1)
    x = torch.randn(2, 40, 11, 19)
    r = torch.randn(conv(x).shape)
    x[1, 3, 4, 5] = float("nan")  # the outputs whose window holds it are NaN, no others
    ep, model = compile_model(Fn(lambda v, s: (F.relu(conv(v) + s), F.relu6(conv(v * 2)),
                                               F.hardtanh(conv(v - 1), -0.5, 0.5))),
                              (x, r), options={"isa": isa})
    got, want = model(x, r), ep.module()(x, r)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4, equal_nan=True)
    assert int(torch.isnan(got[0]).sum()) == 9 * 35
    ops = winograd_convs(ep)
    assert {(op.residual is not None, op.clamp_max) for op in ops} == {
        (True, None), (False, 6.0), (False, 0.5)}


def test_small_planes_few_channels_and_strides_keep_their_paths():
    """Fewer than 16 tiles of output (a 6x6 plane), fewer than 32 channels, a stride, a
    dilation or groups: not Winograd."""
    for conv, shape in [(nn.Conv2d(64, 64, 3, padding=1), (1, 64, 6, 6)),
                        (nn.Conv2d(16, 64, 3, padding=1), (1, 16, 20, 20)),
                        (nn.Conv2d(64, 16, 3, padding=1), (1, 64, 20, 20)),
                        (nn.Conv2d(64, 64, 3, stride=2, padding=1), (1, 64, 20, 20)),
                        (nn.Conv2d(64, 64, 3, padding=2, dilation=2), (1, 64, 20, 20)),
                        (nn.Conv2d(64, 64, 3, padding=1, groups=2), (1, 64, 20, 20))]:
        ep = torch.export.export(conv.eval(), (torch.randn(shape),))
        assert winograd_convs(ep) == []


def test_dynamic_image_sizes(compile_model):
    """Sizes known at run time only: the plane's tiles (and the workspace) follow them."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 40, 3))
    h, w = torch.export.Dim("h", min=4, max=64), torch.export.Dim("w", min=4, max=64)
    ep, model = compile_model(m, (torch.randn(2, 32, 16, 16),),
                              dynamic_shapes={"input": {2: h, 3: w}})
    assert len(winograd_convs(ep)) == 2
    for hw in ((16, 16), (5, 4), (33, 17), (64, 63)):
        x = torch.randn(2, 32, *hw)
        torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)


def test_python_packing_is_the_kernels(kernel_library):
    """The transform written at compile time (numpy) is the one the library writes for a
    swapped weight (aotc_sconv_pack_winograd), bit for bit."""
    import ctypes

    lib = kernel_library("native", ["conv.cpp", "gemm.cpp"])
    nr, kc = ctypes.c_int64(), ctypes.c_int64()
    lib.aotc_sgemm_packed_layout(ctypes.byref(nr), ctypes.byref(kc))
    rng = np.random.default_rng(0)
    for cout, cin in ((32, 32), (37, 45)):
        w = rng.standard_normal((cout, cin, 3, 3), dtype=np.float32)
        packing = PackedConvWinograd(cout, cin, nr.value, kc.value)
        want = pack_winograd(w, packing)
        got = np.zeros(packing.nbytes() // 4 + 16, np.float32)
        start = -got.ctypes.data % 64 // 4  # 64-byte aligned, as the package keeps it
        fn = lib.aotc_sconv_pack_winograd
        fn.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
        assert fn(cout, cin, w.ctypes.data, got[start:].ctypes.data) == 0
        np.testing.assert_array_equal(got[start:start + want.size], want)


def _swap_model(tmp_path):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(32, 48, 3, padding=1), nn.ReLU(),
                      nn.Conv2d(48, 32, 3, padding=1)).eval()
    x = torch.randn(2, 32, 10, 9)
    with torch.no_grad():
        ep = torch.export.export(m, (x,))
    assert len(winograd_convs(ep)) == 2
    new = copy.deepcopy(m)
    with torch.no_grad():
        for t in new.state_dict().values():
            t.mul_(0.5 + torch.rand_like(t))
    return m, new, x, aotc.compile_and_package(ep, tmp_path / "a.pt2")


@pytest.mark.parametrize("user_managed", [False, True])
def test_swapped_weight_is_repacked(tmp_path, user_managed):
    _, new, x, path = _swap_model(tmp_path)
    model = aotc.load_package(path)
    with torch.no_grad():
        fresh = aotc.load_package(aotc.compile_and_package(
            torch.export.export(new, (x,)), tmp_path / "b.pt2"))
        model.load_constants({k: v.clone() for k, v in new.state_dict().items()},
                             user_managed=user_managed)
        torch.testing.assert_close(model(x), fresh(x), rtol=0, atol=0)
        torch.testing.assert_close(model(x), new(x), rtol=1e-4, atol=1e-4)
