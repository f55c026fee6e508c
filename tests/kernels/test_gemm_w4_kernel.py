"""kernels/gemm_w4.cpp through its C ABI: int4 weights stored two a byte (aotc_wo_pack_int4's
layout, checked byte for byte against numpy's), x times them dequantized per group, against
numpy's float64 product of the dequantized weight. Built for every -march level this CPU
runs, and on AVX-512 also with the bfloat16 dot-product form switched off
(AOTC_W4_NO_BF16), so that both AVX-512 forms are tested where the CPU has avx512_bf16:
odd M and N, K from 32 to 4096 (multiples of 64 take the bfloat16 form, others the float
one), groups of 32, 64, 128 and whole rows, with and without zero points, bias, a strided x
and output, values that are not finite or huge, and every thread count alike."""
from __future__ import annotations

import ctypes
import shutil

import numpy as np
import pytest
from test_gemm_wo_kernel import check, expected, run_kernel

from aotc.target.host import cpu_flags

V4 = {"avx512f", "avx512bw", "avx512vl", "avx512dq"}
BUILDS = {"x86-64-v4": (V4, []), "x86-64-v4-float": (V4, ["-DAOTC_W4_NO_BF16"]),
          "x86-64-v3": ({"avx2", "fma", "bmi2"}, []), "x86-64": (set(), [])}

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not available")
i64, ptr = ctypes.c_int64, ctypes.c_void_p


@pytest.fixture(scope="module", params=list(BUILDS))
def lib(request, kernel_library):
    needs, defines = BUILDS[request.param]
    missing = needs - cpu_flags()
    if missing:
        pytest.skip(f"{request.param} needs {sorted(missing)}, which this CPU lacks")
    # more than a few rows multiply dequantized panels with gemm.cpp's GEMM
    out = kernel_library(request.param.removesuffix("-float"), ["gemm_w4.cpp", "gemm.cpp"],
                         tuple(defines))
    out.aotc_gemm_w4_f32.restype = None
    out.aotc_gemm_w4_f32.argtypes = [i64, i64, i64, ptr, i64, ptr, i64, ptr, ptr, ptr, ptr, i64]
    out.aotc_wo_pack_int4.restype = i64
    out.aotc_wo_pack_int4.argtypes = [i64, i64, ptr, ptr]
    return out


def nibbles(q: np.ndarray) -> np.ndarray:
    """The documented layout: runs of 32 values, byte j holding value j + 8 (low nibble) and
    value 16 + j + 8 (high)."""
    n, k = q.shape
    runs = (q.astype(np.int16) + 8).reshape(n, k // 32, 2, 16) & 15
    return (runs[:, :, 0] | (runs[:, :, 1] << 4)).astype(np.uint8).reshape(n, k // 2)


def _weights(rng, n, k, group, zero):
    q = rng.integers(-8, 8, (n, k)).astype(np.int8)
    scale = rng.uniform(0.001, 0.02, (n, k // group)).astype(np.float32)
    zp = rng.integers(-8, 8, (n, k // group)).astype(np.int8) if zero else None
    return q, scale, zp


def _pack(lib, q):
    out = np.empty((q.shape[0], q.shape[1] // 2), np.uint8)
    assert lib.aotc_wo_pack_int4(q.shape[0], q.shape[1], q.ctypes.data, out.ctypes.data) == 0
    return out


def _run(lib, x, packed, group, scale, zero, bias, ldo=None):
    return run_kernel(lib.aotc_gemm_w4_f32, x, packed, group, scale, zero, bias, ldo)


def test_packing_is_the_documented_layout(lib):
    q = np.random.default_rng(0).integers(-8, 8, (5, 96)).astype(np.int8)
    np.testing.assert_array_equal(_pack(lib, q), nibbles(q))


def test_packing_counts_values_outside_int4(lib):
    q = np.zeros((2, 64), np.int8)
    q[0, 3], q[1, 40], q[1, 63] = 8, -9, 127
    out = np.empty(64, np.uint8)
    assert lib.aotc_wo_pack_int4(2, 64, q.ctypes.data, out.ctypes.data) == 3
    assert lib.aotc_wo_pack_int4(2, 48, q.ctypes.data, out.ctypes.data) == -1  # K % 32


# (n, k, group) with groups that divide K, as torchao's do (0: one group per row)
SHAPES = [(n, k, g) for n, k in [(1, 32), (7, 64), (33, 96), (65, 1024), (19, 4096)]
          for g in (32, 64, 128, 0) if k % (g or k) == 0]


@pytest.mark.parametrize("m", [1, 2, 3, 4, 17])
@pytest.mark.parametrize("n,k,group", SHAPES)
@pytest.mark.parametrize("zero", [True, False])
def test_matches_the_dequantized_product(lib, m, n, k, group, zero):
    group_k = group or k
    rng = np.random.default_rng(m * 7919 + n * 31 + k + group)
    q, scale, zp = _weights(rng, n, k, group_k, zero)
    x = rng.standard_normal((m, k)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32) if n % 2 else None
    check(_run(lib, x, _pack(lib, q), group, scale, zp, bias),
           expected(x, q, group_k, scale, zp, bias), k)


def test_strided_rows(lib):
    rng = np.random.default_rng(5)
    q, scale, zp = _weights(rng, 21, 128, 32, True)
    full = rng.standard_normal((6, 150)).astype(np.float32)
    x = full[:, :128]  # row stride 150
    for m in (1, 6):  # the GEMV per row, and panels
        out = _run(lib, x[:m], _pack(lib, q), 32, scale, zp, None, ldo=30)
        check(out[:, :21], expected(x[:m], q, 32, scale, zp, None), 128)
        assert (out[:, 21:] == -7.0).all()  # past N: untouched


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan, 3e38, 1e35])
def test_values_past_the_bfloat16_form(lib, value):
    """A row of x with inf, NaN or a value whose products with the bfloat16 form's offsets
    could overflow gives what the float32 product gives."""
    rng = np.random.default_rng(7)
    q, scale, zp = _weights(rng, 9, 128, 32, True)
    x = rng.standard_normal((1, 128)).astype(np.float32)
    x[0, 70] = value
    got = _run(lib, x, _pack(lib, q), 32, scale, zp, None)
    want = expected(x, q, 32, scale, zp, None)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite].astype(np.float32))
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4)


def test_empty_k_is_the_bias(lib):
    bias = np.arange(3, dtype=np.float32)
    out = np.full((2, 3), -7.0, np.float32)
    lib.aotc_gemm_w4_f32(2, 3, 0, None, 0, None, 32, None, None, bias.ctypes.data,
                         out.ctypes.data, 3)
    np.testing.assert_array_equal(out, np.stack([bias, bias]))


def test_every_thread_count_agrees(lib):
    rng = np.random.default_rng(11)
    q, scale, zp = _weights(rng, 301, 512, 32, True)
    packed = _pack(lib, q)
    omp = ctypes.CDLL("libgomp.so.1")  # the OpenMP runtime the kernel library links
    before = omp.omp_get_max_threads()
    try:
        for m in (1, 5):
            x = rng.standard_normal((m, 512)).astype(np.float32)
            want = _run(lib, x, packed, 32, scale, zp, None)
            for threads in (1, 2, 3):
                omp.omp_set_num_threads(threads)
                np.testing.assert_array_equal(_run(lib, x, packed, 32, scale, zp, None), want)
    finally:
        omp.omp_set_num_threads(before)
