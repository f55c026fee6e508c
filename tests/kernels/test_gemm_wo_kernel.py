"""kernels/gemm_wo.cpp through its C ABI, built for every -march level this CPU runs (the
AVX-512, AVX2 + FMA and portable paths): x times an int8 or int4 weight dequantized per
group in registers, against numpy's float64 product of the dequantized weight, for odd M and
N, K from 32 to 4096, per-channel int8 (one group) and int4 groups of 32 and 128 with zero
points, a strided x and output, and every thread count alike; from 16 rows (prefill) by
float32 panels of the dequantized weight."""
from __future__ import annotations

import ctypes
import shutil

import numpy as np
import pytest

from aotc.target.host import cpu_flags

NEEDS = {"x86-64-v4": {"avx512f", "avx512bw", "avx512vl", "avx512dq"},
         "x86-64-v3": {"avx2", "fma", "bmi2"}, "x86-64": set()}

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not available")
i64, ptr = ctypes.c_int64, ctypes.c_void_p


@pytest.fixture(scope="module", params=list(NEEDS))
def lib(request, kernel_library):
    march = request.param
    missing = NEEDS[march] - cpu_flags()
    if missing:
        pytest.skip(f"{march} needs {sorted(missing)}, which this CPU lacks")
    # prefill (16 rows and more) multiplies dequantized panels with gemm.cpp's GEMM
    out = kernel_library(march, ["gemm_wo.cpp", "gemm.cpp"])
    out.aotc_gemm_wo_f32.restype = None
    out.aotc_gemm_wo_f32.argtypes = [i64, i64, i64, ptr, i64, ptr, i64, ptr, ptr, ptr, ptr, i64]
    return out


def _weights(rng, n, k, group, bits):
    lo, hi = (-128, 128) if bits == 8 else (-8, 8)
    q = rng.integers(lo, hi, (n, k)).astype(np.int8)
    groups = -(-k // group)
    scale = rng.uniform(0.001, 0.02, (n, groups)).astype(np.float32)
    zero = None if bits == 8 else rng.integers(-3, 4, (n, groups)).astype(np.int8)
    return q, scale, zero


def run_kernel(fn, x, weight, group, scale, zero, bias, ldo=None):
    """out [m, ldo] from the weight-only kernel `fn` (gemm_wo's or gemm_w4's entry) for x and
    `weight` as the kernel reads it (N rows); columns past N keep -7."""
    m, k = x.shape
    n = weight.shape[0]
    ldo = ldo or n
    out = np.full((m, ldo), -7.0, np.float32)
    fn(m, n, k, x.ctypes.data, x.strides[0] // 4, weight.ctypes.data, group, scale.ctypes.data,
       zero.ctypes.data if zero is not None else None,
       bias.ctypes.data if bias is not None else None, out.ctypes.data, ldo)
    return out


def _run(lib, x, q, group, scale, zero, bias, ldo=None):
    return run_kernel(lib.aotc_gemm_wo_f32, x, q, group, scale, zero, bias, ldo)


def expected(x, q, group, scale, zero, bias):
    """x times q dequantized per group ((q - zero) * scale in float32, as eager), in float64."""
    g = np.arange(q.shape[1]) // group
    z = zero[:, g].astype(np.int64) if zero is not None else 0
    w = ((q.astype(np.int64) - z).astype(np.float32) * scale[:, g]).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # inf in x: as the float32 product
        out = x.astype(np.float64) @ w.T
    return out + bias if bias is not None else out


def check(got, want, k):
    # float32 sums of K terms in another order: within a few ulps of the terms' magnitude
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.sqrt(k))


@pytest.mark.parametrize("m", [1, 2, 3, 5, 8, 13, 16, 37])
@pytest.mark.parametrize("n,k", [(1, 32), (7, 64), (33, 96), (65, 1056), (19, 4096)])
@pytest.mark.parametrize("kind", ["int8", "int4_g32", "int4_g128"])
def test_matches_the_dequantized_product(lib, m, n, k, kind):
    bits, group = (8, k) if kind == "int8" else (4, int(kind.split("_g")[1]))
    if k % group:
        pytest.skip("torchao's groups divide K")
    rng = np.random.default_rng(m * 7919 + n * 31 + k)
    q, scale, zero = _weights(rng, n, k, group, bits)
    x = rng.standard_normal((m, k)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32) if n % 2 else None
    check(_run(lib, x, q, group, scale, zero, bias),
           expected(x, q, group, scale, zero, bias), k)


@pytest.mark.parametrize("k,group", [(37, 37), (45, 9), (100, 0)])
def test_groups_past_the_vector_width(lib, k, group):
    """A K (per channel) or a group that no vector divides takes the scalar tail; group 0
    is one group per row."""
    rng = np.random.default_rng(k)
    q, scale, zero = _weights(rng, 11, k, group or k, 4)
    x = rng.standard_normal((3, k)).astype(np.float32)
    check(_run(lib, x, q, group, scale, zero, None),
           expected(x, q, group or k, scale, zero, None), k)


def test_strided_rows(lib):
    rng = np.random.default_rng(5)
    q, scale, zero = _weights(rng, 21, 64, 32, 4)
    full = rng.standard_normal((6, 80)).astype(np.float32)
    x = full[:, :64]  # row stride 80
    out = _run(lib, x, q, 32, scale, zero, None, ldo=30)
    check(out[:, :21], expected(x, q, 32, scale, zero, None), 64)
    assert (out[:, 21:] == -7.0).all()  # past N: untouched


def test_every_thread_count_agrees(lib):
    rng = np.random.default_rng(11)
    q, scale, zero = _weights(rng, 301, 512, 32, 4)
    x = rng.standard_normal((5, 512)).astype(np.float32)
    want = _run(lib, x, q, 32, scale, zero, None)
    omp = ctypes.CDLL("libgomp.so.1")  # the OpenMP runtime the kernel library links
    before = omp.omp_get_max_threads()
    try:
        for threads in (1, 2, 3):
            omp.omp_set_num_threads(threads)
            np.testing.assert_array_equal(_run(lib, x, q, 32, scale, zero, None), want)
    finally:
        omp.omp_set_num_threads(before)
