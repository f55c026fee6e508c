"""aotc_sconv with channels-last activations (aotc_conv_shape.layout): a depthwise convolution
(the channel-blocked kernel, and with both channels last the kernel without copies: rows of
several tiles with edges at both ends, and rows shorter than a tile), a 1x1 one and stems
(conv_stem.h) with a packed weight, with x, y or both channels last, against the same
convolution channels first, on each vector build this CPU can run: the same values bit for
bit (the same sums in the same order), with the residual and every activation, edges of a
channel block, batches and 2 threads, and nothing outside y written."""
from __future__ import annotations

import ctypes
import shutil

import numpy as np
import pytest
from test_gemm import _Threads, aligned_floats, builds  # noqa: F401  (the fixture)

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not available")

i64, ptr, f32 = ctypes.c_int64, ctypes.c_void_p, ctypes.c_float
X_LAST, Y_LAST = 1, 2
SENTINEL = np.float32(-777.0)


class ConvShape(ctypes.Structure):
    _fields_ = [("batch", i64), ("in_channels", i64), ("out_channels", i64), ("groups", i64),
                ("ndim", i64), ("in_size", i64 * 3), ("out_size", i64 * 3),
                ("kernel", i64 * 3), ("stride", i64 * 3), ("padding", i64 * 3),
                ("dilation", i64 * 3), ("transposed", i64), ("clamped", i64),
                ("clamp_min", f32), ("clamp_max", f32), ("residual", ptr),
                ("weight_packed", i64), ("layout", i64)]


@pytest.fixture(scope="module", params=["x86-64-v4", "x86-64-v3"])
def lib(request, builds):  # noqa: F811
    builds(request.param)  # skips where this CPU cannot run the build
    lib = request.getfixturevalue("kernel_library")(request.param, ["conv.cpp", "gemm.cpp"])
    lib.aotc_sconv.restype = None
    lib.aotc_sconv.argtypes = [ctypes.POINTER(ConvShape), ptr, ptr, ptr, ptr, ptr]
    lib.aotc_sconv_workspace.restype = i64
    lib.aotc_sconv_workspace.argtypes = [ctypes.POINTER(ConvShape)]
    lib.aotc_sgemm_packed_floats.restype = i64
    lib.aotc_sgemm_packed_floats.argtypes = [i64, i64]
    lib.aotc_sgemm_pack_b.restype = None
    lib.aotc_sgemm_pack_b.argtypes = [i64, i64, ptr, i64, i64, ptr]
    return lib


def last(t: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(t.transpose(0, 2, 3, 1))


def run(lib, sh: ConvShape, x, w, bias, residual, layout):
    """y of the convolution with the given layout, returned channels first."""
    n, co = sh.batch, sh.out_channels
    ho, wo = sh.out_size[0], sh.out_size[1]
    xs = last(x) if layout & X_LAST else np.ascontiguousarray(x)
    res = None
    if residual is not None:
        res = last(residual) if layout & Y_LAST else np.ascontiguousarray(residual)
    sh.residual = res.ctypes.data if res is not None else None
    sh.layout = layout
    y = np.full(n * co * ho * wo + 16, SENTINEL, np.float32)
    ws = np.full(max(lib.aotc_sconv_workspace(ctypes.byref(sh)), 1), np.nan, np.float32)
    lib.aotc_sconv(ctypes.byref(sh), xs.ctypes.data, w.ctypes.data,
                   bias.ctypes.data if bias is not None else None, y.ctypes.data, ws.ctypes.data)
    assert np.all(y[n * co * ho * wo:] == SENTINEL)
    y = y[:n * co * ho * wo]
    return (y.reshape(n, ho, wo, co).transpose(0, 3, 1, 2) if layout & Y_LAST
            else y.reshape(n, co, ho, wo))


def case(lib, *, n, cin, cout, hw, k, s, p, groups, act, residual, bias=True, seed=0):
    rng = np.random.default_rng(seed)
    ho = (hw + 2 * p - k) // s + 1
    sh = ConvShape(n, cin, cout, groups, 2, (i64 * 3)(hw, hw, 0), (i64 * 3)(ho, ho, 0),
                   (i64 * 3)(k, k, 0), (i64 * 3)(s, s, 0), (i64 * 3)(p, p, 0),
                   (i64 * 3)(1, 1, 0), 0, act, -0.25, 0.5, None, 0, 0)
    x = rng.standard_normal((n, cin, hw, hw)).astype(np.float32)
    x[0, 0, 0, 0] = np.nan  # a NaN reaches the outputs that read it
    w = rng.standard_normal((cout, cin // groups, k, k)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) if bias else None
    r = rng.standard_normal((n, cout, ho, ho)).astype(np.float32) if residual else None
    if groups == 1:  # the GEMM's packed B [Cin*taps, Cout]: element (k, n) at w[n*K + k]
        kdim = cin * k * k
        packed = aligned_floats(lib.aotc_sgemm_packed_floats(kdim, cout))
        lib.aotc_sgemm_pack_b(kdim, cout, w.ctypes.data, 1, kdim, packed.ctypes.data)
        sh.weight_packed, wt = 1, packed
        layouts = [0, Y_LAST] + ([X_LAST, X_LAST | Y_LAST] if k == 1 and s == 1 and p == 0 else [])
    else:
        wt = np.ascontiguousarray(w)
        layouts = [0, X_LAST, Y_LAST, X_LAST | Y_LAST]
    want = run(lib, sh, x, wt, b, r, 0)
    assert np.isnan(want).any() and not np.isnan(want).all()
    for layout in layouts[1:]:
        np.testing.assert_array_equal(run(lib, sh, x, wt, b, r, layout), want,
                                      err_msg=f"layout {layout}")


ACTS = [0, 1, 2]  # none, the clamp, hardswish


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("channels,hw,k,s", [(16, 9, 3, 1), (37, 12, 3, 2), (40, 7, 5, 1),
                                             (8, 20, 3, 2), (96, 15, 5, 2), (24, 33, 3, 1),
                                             (20, 27, 5, 1)])
def test_depthwise(lib, channels, hw, k, s, act):
    for n, residual in ((1, False), (2, True)):
        case(lib, n=n, cin=channels, cout=channels, hw=hw, k=k, s=s, p=k // 2,
             groups=channels, act=act, residual=residual, seed=channels + n)


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("cin,cout,hw", [(16, 24, 9), (33, 70, 6), (5, 40, 17), (64, 20, 3)])
def test_pointwise_packed(lib, cin, cout, hw, act):
    for n, residual in ((1, True), (3, False)):
        case(lib, n=n, cin=cin, cout=cout, hw=hw, k=1, s=1, p=0, groups=1, act=act,
             residual=residual, bias=n == 1, seed=cin + n)


@pytest.mark.parametrize("act", ACTS)
def test_stem_into_channels_last(lib, act):
    # the stem kernel (conv_stem.h): tiles inside a row and at both its ends, strides 1, 2
    # and 3, output channels in one vector, two (the second partial) and a whole panel
    case(lib, n=2, cin=3, cout=32, hw=23, k=3, s=2, p=1, groups=1, act=act, residual=False)
    case(lib, n=1, cin=3, cout=16, hw=16, k=3, s=2, p=1, groups=1, act=act, residual=True)
    case(lib, n=1, cin=1, cout=8, hw=37, k=3, s=1, p=1, groups=1, act=act, residual=True)
    case(lib, n=2, cin=4, cout=24, hw=61, k=5, s=2, p=2, groups=1, act=act, residual=False)
    case(lib, n=1, cin=3, cout=20, hw=40, k=7, s=3, p=3, groups=1, act=act, residual=True)


def test_threads(lib):
    with _Threads(2):
        case(lib, n=2, cin=96, cout=96, hw=28, k=3, s=1, p=1, groups=96, act=1, residual=True)
        case(lib, n=2, cin=24, cout=144, hw=28, k=1, s=1, p=0, groups=1, act=2, residual=True)
        case(lib, n=1, cin=3, cout=32, hw=56, k=3, s=2, p=1, groups=1, act=1, residual=False)
