"""kernels/gemm_int8.cpp through its C ABI, built for every -march level this CPU runs, each
with each of its paths forced in turn (AMX tiles where the CPU has amx_int8, vpdpbusd on
512 bits where it has avx512_vnni, on 256 bits where it has avx_vnni, and the widened
vpmaddwd path or the portable loop otherwise): int32 products exactly equal to numpy's
int64 product of the operands, for uint8 and int8 A with zero points, odd shapes, strided
and transposed operands, the extreme values (where vpmaddubsw would saturate), and every
thread count alike; and convolutions read as products of their patches (aotc_qconv_s32),
channels first (a column at a time, or by kernel rows padded to whole groups), tap-major
and channels last, equal to numpy's sum over the taps with the zero point outside the
input."""
from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from aotc.target.host import cpu_flags

KERNEL_DIR = Path(__file__).resolve().parents[2] / "src" / "aotc" / "kernels"
FLAGS = ["-O3", "-fopenmp", "-fPIC", "-shared", "-std=c++17", "-Wall", "-Wextra", "-Werror"]
NEEDS = {"x86-64-v4": {"avx512f", "avx512bw", "avx512vl", "avx512dq"},
         "x86-64-v3": {"avx2", "fma", "bmi2"}, "x86-64": set()}
# path -> (the CPU feature it runs on, the defines that leave it the first one taken)
PATHS = {"amx": ("amx_int8", []), "vnni512": ("avx512_vnni", ["-DAOTC_QGEMM_NO_AMX"]),
         "avxvnni": ("avx_vnni", ["-DAOTC_QGEMM_NO_AVX512_VNNI"]),
         "novnni": (None, ["-DAOTC_QGEMM_NO_VNNI"])}
BUILDS = [(march, path) for march in NEEDS for path in PATHS]

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not available")
i64, i32, ptr = ctypes.c_int64, ctypes.c_int32, ctypes.c_void_p


@pytest.fixture(scope="module", params=BUILDS, ids=[f"{m}-{p}" for m, p in BUILDS])
def lib(request, tmp_path_factory):
    march, path_name = request.param
    missing = NEEDS[march] - cpu_flags()
    if missing:
        pytest.skip(f"{march} needs {sorted(missing)}, which this CPU lacks")
    feature, extra = PATHS[path_name]
    if feature is not None and feature not in cpu_flags():
        pytest.skip(f"this CPU lacks {feature}: the {path_name} path is not taken")
    path = tmp_path_factory.mktemp(march) / "libgemm_int8.so"
    res = subprocess.run(["g++", f"-march={march}", *FLAGS, *extra, "-I", str(KERNEL_DIR),
                          str(KERNEL_DIR / "gemm_int8.cpp"), "-o", str(path)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    out = ctypes.CDLL(str(path))
    out.aotc_qgemm_packed_bytes.restype = i64
    out.aotc_qgemm_packed_bytes.argtypes = [i64, i64]
    out.aotc_qgemm_pack_b.restype = None
    out.aotc_qgemm_pack_b.argtypes = [i64, i64, ptr, i64, i64, ptr]
    out.aotc_qgemm_s32.restype = None
    out.aotc_qgemm_s32.argtypes = [i64, i64, i64, ptr, i64, ctypes.c_int, i32, ptr, ptr, i64,
                                   ptr]
    out.aotc_qconv_s32.restype = None
    out.aotc_qconv_s32.argtypes = [i64, i64, ptr, ptr, ctypes.c_int, i32, ptr, ptr, ptr, ptr]
    out.aotc_qconv_pack_b.restype = None
    out.aotc_qconv_pack_b.argtypes = [i64, i64, i64, ptr, i64, i64, ptr]
    out.aotc_qconv_pack_b_rows.restype = None
    out.aotc_qconv_pack_b_rows.argtypes = [i64, i64, i64, ptr, i64, i64, ptr]
    return out


def _pack(lib, b: np.ndarray) -> np.ndarray:
    """b: an int8 array viewed as [K, N] with any strides."""
    k, n = b.shape
    packed = np.full(lib.aotc_qgemm_packed_bytes(k, n), 0x5A, np.uint8)  # no byte left unset
    lib.aotc_qgemm_pack_b(k, n, b.ctypes.data, b.strides[0], b.strides[1], packed.ctypes.data)
    return packed


def _gemm(lib, a: np.ndarray, zero: int, packed: np.ndarray, n: int, ldc: int | None = None,
          epilogue=None):
    m, k = a.shape
    ldc = ldc or n
    c = np.full((m, ldc), -7, np.int32)
    lib.aotc_qgemm_s32(m, n, k, a.ctypes.data, a.strides[0], int(a.dtype == np.int8), zero,
                       packed.ctypes.data, c.ctypes.data, ldc, epilogue)
    return c


EPILOGUE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32), i64, i64,
                               i64, i64, i64)


class _Epilogue(ctypes.Structure):
    _fields_ = [("fn", EPILOGUE_FN), ("ctx", ctypes.c_void_p)]


class Recorder:
    """An aotc_qgemm_epilogue that writes every block it is handed into `out` ([M, N]) by the
    header's contract (a convolution's blocks transposed, within one image of `plane`
    positions), counting how often each element comes."""

    def __init__(self, m: int, n: int, plane: int | None = None):
        self.out = np.full((m, n), -7, np.int64)
        self.count = np.zeros((m, n), np.int64)
        self.plane, self.spans = plane, []
        self.fn = EPILOGUE_FN(self._block)  # kept alive while the kernel runs
        self.struct = _Epilogue(self.fn, None)

    def _block(self, ctx, acc, ld, row, col, rows, cols):
        lines, length = (cols, rows) if self.plane else (rows, cols)
        a = np.ctypeslib.as_array(acc, shape=(lines, ld))[:, :length]
        block = a.T if self.plane else a
        self.out[row:row + rows, col:col + cols] = block
        self.count[row:row + rows, col:col + cols] += 1
        if self.plane:
            self.spans.append((row // self.plane, (row + rows - 1) // self.plane))

    @property
    def pointer(self):
        return ctypes.addressof(self.struct)


def _expected(a, zero, b):
    return ((a.astype(np.int64) - zero) @ b.astype(np.int64)).astype(np.int32)


# AMX takes products of 16 rows and more: whole and partial tiles of rows (16, 17, 33),
# one or two panels, K past and short of a tile's 64; an unsigned A of whole tiles (K 128,
# lda K) is read in place for whole blocks of rows (130: two, then a packed rest)
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (3, 17, 5), (4, 16, 4), (13, 45, 37),
                                   (64, 33, 128), (65, 70, 1031), (130, 16, 3), (5, 100, 0),
                                   (16, 16, 64), (17, 48, 65), (33, 80, 200), (100, 1, 7),
                                   (130, 20, 128)])
@pytest.mark.parametrize("signed", [False, True])
def test_products_are_exact(lib, m, n, k, signed):
    rng = np.random.default_rng(m * 1000 + n + k)
    dt, lo, hi = (np.int8, -128, 128) if signed else (np.uint8, 0, 256)
    a = rng.integers(lo, hi, (m, k)).astype(dt)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    zero = 3 if signed else 128
    c = _gemm(lib, a, zero, _pack(lib, b), n)
    np.testing.assert_array_equal(c, _expected(a, zero, b))


def test_extremes_do_not_saturate(lib):
    # 255 x -128 pairs: a pair sum of -65280 is past int16, where vpmaddubsw would clamp
    a = np.full((7, 64), 255, np.uint8)
    b = np.full((64, 20), -128, np.int8)
    b[::2, ::3] = 127
    c = _gemm(lib, a, 0, _pack(lib, b), 20)
    np.testing.assert_array_equal(c, _expected(a, 0, b))
    sa = np.full((5, 40), -128, np.int8)
    c = _gemm(lib, sa, -128, _pack(lib, b[:40]), 20)
    np.testing.assert_array_equal(c, np.zeros((5, 20), np.int32))  # (-128 - -128) * b


def test_strided_operands(lib):
    rng = np.random.default_rng(7)
    full_a = rng.integers(0, 256, (9, 50)).astype(np.uint8)
    a = full_a[:, :37]  # lda 50 > K
    bt = rng.integers(-128, 128, (23, 37)).astype(np.int8)
    b = bt.T  # transposed: sb_k 1, sb_n 37
    c = _gemm(lib, a, 17, _pack(lib, b), 23, ldc=30)
    np.testing.assert_array_equal(c[:, :23], _expected(a, 17, b))
    assert (c[:, 23:] == -7).all()  # past N: untouched
    # rows of whole four-byte groups, unsigned: read where they lie, 50 bytes apart (the
    # dot-product tiles), or packed (the AMX tiles, which need rows of whole tiles)
    for m in (9, 70):
        rows = rng.integers(0, 256, (m, 50)).astype(np.uint8)
        c = _gemm(lib, rows[:, :36], 200, _pack(lib, bt[:, :36].T), 23)
        np.testing.assert_array_equal(c, _expected(rows[:, :36], 200, bt[:, :36].T))


def test_layout_is_the_documented_one(lib):
    rng = np.random.default_rng(3)
    k, n = 9, 20
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    packed = _pack(lib, b)
    groups, panels = 16, -(-n // 16)  # ceil(9 / 4) groups padded to a whole tile's 16
    padded = np.zeros((groups * 4, panels * 16), np.int8)
    padded[:k, :n] = b
    data = padded.reshape(groups, 4, panels, 16).transpose(2, 0, 3, 1).reshape(-1)
    np.testing.assert_array_equal(packed[:data.size].view(np.int8), data)
    colsum = packed[data.size:].view(np.int32)
    np.testing.assert_array_equal(colsum[:n], b.astype(np.int32).sum(0))
    assert (colsum[n:] == 0).all()


def test_every_thread_count_agrees(lib):
    rng = np.random.default_rng(11)
    a = rng.integers(0, 256, (300, 200)).astype(np.uint8)
    b = rng.integers(-128, 128, (200, 90)).astype(np.int8)
    packed = _pack(lib, b)
    expected = _expected(a, 100, b)
    omp = ctypes.CDLL("libgomp.so.1")  # the OpenMP runtime the kernel library links
    before = omp.omp_get_max_threads()
    try:
        for threads in (1, 2, 3):
            omp.omp_set_num_threads(threads)
            np.testing.assert_array_equal(_gemm(lib, a, 100, packed, 90), expected)
    finally:
        omp.omp_set_num_threads(before)


@pytest.mark.parametrize("k,n,transposed,taps,row_taps", [
    (1, 1, False, 1, 0), (9, 20, True, 1, 0), (130, 33, False, 1, 0), (27, 16, True, 9, 0),
    (72, 40, True, 9, 0), (49 * 3, 20, True, 49, 0),
    (49 * 3, 20, True, 1, 7), (4 * 5, 17, False, 1, 4), (11 * 2, 33, True, 1, 11)])
def test_layout_matches_the_compilers_packer(lib, k, n, transposed, taps, row_taps):
    from aotc.ir.nodes import PackedInt8B
    from aotc.scheduler.prepack import pack_int8_groups

    rng = np.random.default_rng(k + n)
    flat = rng.integers(-128, 128, k * n + 3).astype(np.int8)
    sb_k, sb_n = (1, k) if transposed else (n, 1)
    b = np.lib.stride_tricks.as_strided(flat[3:], shape=(k, n), strides=(sb_k, sb_n))
    packing = PackedInt8B(k, n, 3, sb_k, sb_n, taps, row_taps)
    expected = pack_int8_groups(flat, packing)
    assert expected.size == packing.nbytes()
    if taps == 1 and not row_taps:
        np.testing.assert_array_equal(_pack(lib, b), expected)
        return
    got = np.full(lib.aotc_qgemm_packed_bytes(packing.rows(), n), 0x5A, np.uint8)
    if row_taps:
        lib.aotc_qconv_pack_b_rows(k, n, row_taps, b.ctypes.data, sb_k, sb_n, got.ctypes.data)
    else:
        lib.aotc_qconv_pack_b(k, n, taps, b.ctypes.data, sb_k, sb_n, got.ctypes.data)
    np.testing.assert_array_equal(got, expected)


def _conv_expected(x, zero, w, stride, padding, dilation):
    """sum over ci, ky, kx of (x - zero)[b, ci, oy*s - p + ky*d, ...] * w[o, ci, ky, kx], the
    zero point outside x (so nothing added there)."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    xp = np.pad(x.astype(np.int64) - zero, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    out = np.zeros((n, oc, oh, ow), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            ys, xs = ky * dh, kx * dw
            tap = xp[:, :, ys:ys + sh * (oh - 1) + 1:sh, xs:xs + sw * (ow - 1) + 1:sw]
            out += np.einsum("bchw,oc->bohw", tap, w[:, :, ky, kx].astype(np.int64))
    return out.astype(np.int32), oh, ow


CONVS = [
    ((1, 3, 17, 19), (7, 7), (2, 2), (3, 3), (1, 1)),    # a stem: 3 channels, K not 4-aligned
    ((2, 8, 9, 9), (3, 3), (1, 1), (1, 1), (1, 1)),      # batch 2, blocks across images
    ((1, 16, 70, 5), (3, 1), (1, 2), (1, 0), (2, 1)),    # rows of 5, stride 2, dilation 2
    ((1, 20, 6, 6), (1, 1), (1, 1), (0, 0), (1, 1)),     # 1x1: a plain product
    ((1, 4, 3, 3), (5, 5), (1, 1), (2, 2), (1, 1)),      # taps mostly outside the input
    ((1, 6, 11, 80), (2, 3), (3, 1), (0, 4), (1, 3)),    # rows longer than a block
    ((1, 32, 17, 18), (3, 3), (2, 2), (1, 1), (1, 1)),   # 32 channels: whole 16-byte blocks
    ((3, 48, 5, 7), (3, 3), (1, 1), (1, 1), (1, 1)),     # planes of 35: blocks across images
    ((1, 64, 9, 10), (1, 1), (1, 1), (0, 0), (1, 1)),    # 1x1 of whole tiles: A read in place
    # kernel rows padded to whole groups: rows of 4, 8 and 11 taps, strides 1 to 4 (16 rows
    # a vector) and 5 (a byte at a time), rows of outputs longer than a vector and a block
    ((2, 3, 20, 70), (4, 8), (1, 3), (2, 4), (1, 1)),
    ((1, 5, 9, 41), (3, 11), (2, 4), (1, 5), (1, 1)),
    ((1, 2, 8, 30), (2, 4), (1, 5), (0, 1), (1, 1)),
    ((1, 3, 12, 150), (7, 7), (2, 1), (3, 3), (1, 1)),
]


# how a convolution reads its input and writes its output: (order, x_last, c_last), the
# order of the patches' columns 0 (as the weight's), 1 (tap-major) or 2 (kernel rows in
# whole groups)
LAYOUTS = {"channels_first": (0, 0, 0), "taps_major": (1, 0, 0), "out_last": (0, 0, 1),
           "taps_major_out_last": (1, 0, 1), "channels_last": (1, 1, 1),
           "row_groups": (2, 0, 0), "row_groups_out_last": (2, 0, 1)}


def _conv(lib, x, zero, w, stride, padding, dilation, layout, epilogue=None):
    """aotc_qconv_s32's output [n, oc, oh, ow] for x [n, c, h, w] and w, the weight packed
    for the column order, x handed over and the output written in the layout's order."""
    taps_major, x_last, c_last = LAYOUTS[layout]
    shape, kernel = x.shape, w.shape[2:]
    oc, taps = w.shape[0], kernel[0] * kernel[1]
    k = shape[1] * taps
    oh, ow = _out_size(shape, kernel, stride, padding, dilation)
    b = w.reshape(oc, k).T
    if taps_major == 2:  # each kernel row padded to a multiple of 4
        rows = k // kernel[1] * -(-kernel[1] // 4) * 4
        packed = np.full(lib.aotc_qgemm_packed_bytes(rows, oc), 0x5A, np.uint8)
        lib.aotc_qconv_pack_b_rows(k, oc, kernel[1], b.ctypes.data, b.strides[0], b.strides[1],
                                   packed.ctypes.data)
    elif taps_major:  # the channels padded to a multiple of 4
        rows = taps * -(-shape[1] // 4) * 4
        packed = np.full(lib.aotc_qgemm_packed_bytes(rows, oc), 0x5A, np.uint8)
        lib.aotc_qconv_pack_b(k, oc, taps, b.ctypes.data, b.strides[0], b.strides[1],
                              packed.ctypes.data)
    else:
        packed = _pack(lib, b)
    geometry = np.array([shape[1], *shape[2:], *kernel, oh, ow, *stride, *padding, *dilation,
                         taps_major, x_last, c_last], np.int64)
    workspace = np.full(x.size * 2, 0xA5, np.uint8)  # room for the channels-last copy
    given = np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if x_last else x
    c = np.full((shape[0], oh, ow, oc) if c_last else (shape[0], oc, oh, ow), -7, np.int32)
    lib.aotc_qconv_s32(shape[0] * oh * ow, oc, given.ctypes.data, geometry.ctypes.data,
                       int(x.dtype == np.int8), zero, packed.ctypes.data, c.ctypes.data,
                       workspace.ctypes.data, epilogue)
    return c.transpose(0, 3, 1, 2) if c_last else c


def _out_size(shape, kernel, stride, padding, dilation):
    return tuple((shape[2 + i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i]
                 + 1 for i in range(2))


@pytest.mark.parametrize("shape,kernel,stride,padding,dilation", CONVS)
@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_convolutions_are_exact(lib, shape, kernel, stride, padding, dilation, signed, layout):
    if LAYOUTS[layout][1] and shape[1] % 4:
        pytest.skip("a channels-last input is read in place for whole 4-byte channel groups")
    rng = np.random.default_rng(sum(shape) + sum(kernel) + signed)
    dt, lo, hi, zero = (np.int8, -128, 128, -5) if signed else (np.uint8, 0, 256, 131)
    x = rng.integers(lo, hi, shape).astype(dt)
    w = rng.integers(-128, 128, (37, shape[1], *kernel)).astype(np.int8)
    expected, _, _ = _conv_expected(x, zero, w, stride, padding, dilation)
    c = _conv(lib, x, zero, w, stride, padding, dilation, layout)
    np.testing.assert_array_equal(c, expected)


@pytest.mark.parametrize("m,n,k", [(3, 17, 5), (70, 45, 37), (130, 80, 64), (40, 1, 9)])
def test_epilogue_gets_each_product_once(lib, m, n, k):
    """With an epilogue, each int32 sum reaches it once, as the plain call stores it, and
    nothing is written to C."""
    rng = np.random.default_rng(m + n + k)
    a = rng.integers(0, 256, (m, k)).astype(np.uint8)
    packed = _pack(lib, rng.integers(-128, 128, (k, n)).astype(np.int8))
    plain = _gemm(lib, a, 3, packed, n)
    rec = Recorder(m, n)
    untouched = _gemm(lib, a, 3, packed, n, epilogue=rec.pointer)
    np.testing.assert_array_equal(rec.count, 1)
    np.testing.assert_array_equal(rec.out, plain)
    np.testing.assert_array_equal(untouched, -7)


@pytest.mark.parametrize("shape,kernel,stride,padding,dilation", [CONVS[0], CONVS[1], CONVS[7]])
@pytest.mark.parametrize("layout", ["channels_first", "taps_major", "channels_last",
                                    "row_groups"])
def test_convolution_epilogue_gets_each_output_once(lib, shape, kernel, stride, padding,
                                                    dilation, layout):
    """A convolution's epilogue gets each output once: writing channels first, transposed,
    never a block that spans two images (batches 2 and 3, planes that are no multiple of the
    block); writing channels last, row-major as a product's."""
    if LAYOUTS[layout][1] and shape[1] % 4:
        pytest.skip("a channels-last input is read in place for whole 4-byte channel groups")
    rng = np.random.default_rng(sum(shape))
    x = rng.integers(0, 256, shape).astype(np.uint8)
    w = rng.integers(-128, 128, (37, shape[1], *kernel)).astype(np.int8)
    expected, _, _ = _conv_expected(x, 131, w, stride, padding, dilation)
    oh, ow = expected.shape[2:]
    c_last = LAYOUTS[layout][2]
    rec = Recorder(shape[0] * oh * ow, 37, plane=None if c_last else oh * ow)
    untouched = _conv(lib, x, 131, w, stride, padding, dilation, layout, rec.pointer)
    np.testing.assert_array_equal(rec.count, 1)
    got = rec.out.reshape(shape[0], oh, ow, 37).transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(untouched, -7)
    assert all(first == last for first, last in rec.spans)


def test_taps_major_packing_is_the_weight_reordered(lib):
    """aotc_qconv_pack_b(taps) packs the weight [N, c, kh, kw] as the plain packing of the
    weight [N, kh, kw, c] would be."""
    rng = np.random.default_rng(5)
    w = rng.integers(-128, 128, (20, 12, 3, 2)).astype(np.int8)
    k, taps = 12 * 6, 6
    b = w.reshape(20, k).T
    packed = np.full(lib.aotc_qgemm_packed_bytes(k, 20), 0x5A, np.uint8)
    lib.aotc_qconv_pack_b(k, 20, taps, b.ctypes.data, b.strides[0], b.strides[1],
                          packed.ctypes.data)
    reordered = np.ascontiguousarray(w.transpose(0, 2, 3, 1)).reshape(20, k).T
    np.testing.assert_array_equal(packed, _pack(lib, reordered))
