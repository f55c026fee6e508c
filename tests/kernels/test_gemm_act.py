"""aotc_sgemm_act: the residual and the convolutions' activation (clamp, hardswish) applied in
the GEMM's stores. On every path of the kernel (packed tiles with edges, few rows in place,
narrow columns, K slices, split-K and teams sharing one B, K = 0) and every x86 build, the
result is bit for bit the plain product's (aotc_sgemm_batched, same sums) with the residual
added and the activation applied afterwards, each element once, nothing outside C written,
and a NaN staying NaN."""
from __future__ import annotations

import ctypes
import shutil

import numpy as np
import pytest
from test_gemm import SENTINEL, _Threads, aligned_floats, builds  # noqa: F401  (the fixture)

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not available")

i64, ptr, f32 = ctypes.c_int64, ctypes.c_void_p, ctypes.c_float

NONE, CLAMP, HARDSWISH = 0, 1, 2


class Activation(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("lo", f32), ("hi", f32), ("residual", ptr)]


@pytest.fixture(scope="module", params=["x86-64-v4", "x86-64-v3", "x86-64"])
def lib(request, builds):  # noqa: F811
    lib = builds(request.param)
    lib.aotc_sgemm_act.restype = None
    lib.aotc_sgemm_act.argtypes = [i64] * 4 + [ptr, i64, i64, i64] * 2 + [ptr, i64, i64] + \
        [ptr, i64, i64, i64, f32, f32, ctypes.POINTER(Activation)]
    lib.aotc_sgemm_prepacked_act.restype = None
    lib.aotc_sgemm_prepacked_act.argtypes = [i64] * 4 + [ptr, i64, i64, i64] + \
        [ptr, ptr, i64, i64] + [ptr, i64, i64, i64, f32, f32, ctypes.POINTER(Activation)]
    return lib


def activated(v: np.ndarray, kind: int, lo: float, hi: float) -> np.ndarray:
    """conv_activation.h in float32: the clamp keeps a NaN, hardswish is (v * t) * (1/6)."""
    v = v.astype(np.float32)
    if kind == CLAMP:
        return np.minimum(np.maximum(v, np.float32(lo)), np.float32(hi))
    if kind == HARDSWISH:
        t = np.minimum(np.maximum(v + np.float32(3), np.float32(0)), np.float32(6))
        return (v * t) * np.float32(1.0 / 6.0)
    return v


def run_act(lib, batch, M, N, K, kind, *, residual=True, b_t=False, shared_b=True, lo=-0.5,
            hi=0.75, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal(batch * M * K).astype(np.float32)
    B = rng.standard_normal((1 if shared_b else batch) * K * N).astype(np.float32)
    sb = (0 if shared_b else K * N,) + ((1, K) if b_t else (N, 1))
    bias = rng.standard_normal(N).astype(np.float32)
    bias[N // 2] = np.nan  # a NaN column: the clamp keeps it
    ldc, sc_batch = N + 3, M * (N + 3) + 5  # padded rows and a gap between matrices
    res = (4 * rng.standard_normal(batch * sc_batch + 7)).astype(np.float32)
    args = (batch, M, N, K, A.ctypes.data, M * K, K, 1, B.ctypes.data, *sb)
    plain = np.full(batch * sc_batch + 7, SENTINEL, np.float32)
    lib.aotc_sgemm_batched(*args, plain.ctypes.data, sc_batch, ldc, bias.ctypes.data, 0, 0, 1,
                           1.0, 1.0)
    got = np.full_like(plain, SENTINEL)
    act = Activation(kind, lo, hi, res.ctypes.data if residual else None)
    lib.aotc_sgemm_act(*args, got.ctypes.data, sc_batch, ldc, bias.ctypes.data, 0, 0, 1, 1.0,
                       1.0, ctypes.byref(act))
    inside = np.zeros(plain.shape, bool)
    for b in range(batch):
        for m in range(M):
            inside[b * sc_batch + m * ldc:b * sc_batch + m * ldc + N] = True
    want = plain.copy()
    want[inside] = activated(plain[inside] + (res[inside] if residual else 0), kind, lo, hi)
    np.testing.assert_array_equal(got, want)  # NaN where want is NaN, SENTINEL outside C
    assert np.isnan(got[inside]).any() == (M > 0 and N > 0)


def run_act_prepacked(lib, batch, M, N, K, kind, *, residual=True, alpha=1.0, beta=1.0, seed=0):
    """aotc_sgemm_prepacked_act against aotc_sgemm_prepacked and the activation after it: the
    same sums (one path for both), a channels-last 1x1 convolution's call."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal(batch * M * K).astype(np.float32)
    B = rng.standard_normal(K * N).astype(np.float32)
    packed = aligned_floats(lib.aotc_sgemm_packed_floats(K, N))
    lib.aotc_sgemm_pack_b(K, N, B.ctypes.data, N, 1, packed.ctypes.data)
    bias = rng.standard_normal(N).astype(np.float32)
    bias[N // 2] = np.nan
    ldc, sc_batch = N + 3, M * (N + 3) + 5
    res = (4 * rng.standard_normal(batch * sc_batch + 7)).astype(np.float32)
    args = (batch, M, N, K, A.ctypes.data, M * K, K, 1, packed.ctypes.data)
    plain = np.full(batch * sc_batch + 7, SENTINEL, np.float32)
    lib.aotc_sgemm_prepacked(*args, plain.ctypes.data, sc_batch, ldc, bias.ctypes.data, 0, 0, 1,
                             alpha, beta, None)
    got = np.full_like(plain, SENTINEL)
    act = Activation(kind, -0.5, 0.75, res.ctypes.data if residual else None)
    lib.aotc_sgemm_prepacked_act(*args, got.ctypes.data, sc_batch, ldc, bias.ctypes.data, 0, 0,
                                 1, alpha, beta, ctypes.byref(act))
    inside = np.zeros(plain.shape, bool)
    for b in range(batch):
        for m in range(M):
            inside[b * sc_batch + m * ldc:b * sc_batch + m * ldc + N] = True
    want = plain.copy()
    want[inside] = activated(plain[inside] + (res[inside] if residual else 0), kind, -0.5, 0.75)
    np.testing.assert_array_equal(got, want)
    ref = (A.reshape(batch, M, K).astype(np.float64) @ B.reshape(K, N)) * alpha + beta * bias
    for b in range(batch):
        rows = plain[b * sc_batch:b * sc_batch + M * ldc].reshape(M, ldc)[:, :N]
        np.testing.assert_allclose(rows, ref[b], rtol=1e-4, atol=1e-4 * np.sqrt(K))


# prepacked products of few columns or a short K (the row tiles on AVX-512: chunks of 6
# vectors and a partial last one, leftover rows, two K slices) and the packed tiles
PREPACKED_SHAPES = [(150, 96, 16), (37, 144, 24), (50, 40, 600), (13, 100, 9), (61, 160, 33),
                    (7, 200, 5), (30, 300, 64)]


@pytest.mark.parametrize("kind", [NONE, CLAMP, HARDSWISH])
@pytest.mark.parametrize("M,N,K", PREPACKED_SHAPES)
def test_prepacked_activation_in_the_stores(lib, M, N, K, kind):
    run_act_prepacked(lib, 1, M, N, K, kind, seed=M)
    run_act_prepacked(lib, 2, M, N, K, kind, residual=False, seed=K)
    run_act_prepacked(lib, 1, M, N, K, kind, alpha=0.5, beta=-2.0, seed=N)


@pytest.mark.parametrize("threads", [2, 3])
def test_prepacked_activation_with_threads(lib, threads):
    with _Threads(threads):
        run_act_prepacked(lib, 1, 400, 96, 16, CLAMP)    # rows split between the threads
        run_act_prepacked(lib, 1, 49, 160, 960, HARDSWISH)  # few rows: columns may be split
        run_act_prepacked(lib, 3, 37, 33, 70, CLAMP)


# packed tiles and their edges, few rows read in place, narrow C (dot products and strips),
# two K slices, K = 0 (the bias alone)
SHAPES = [(150, 70, 20), (13, 31, 257), (5, 7, 3), (1, 40, 300), (40, 3, 16), (33, 16, 9),
          (64, 200, 1100), (9, 20, 0)]


@pytest.mark.parametrize("kind", [NONE, CLAMP, HARDSWISH])
@pytest.mark.parametrize("M,N,K", SHAPES)
def test_activation_in_the_stores_is_the_pass_after_them(lib, M, N, K, kind):
    for batch in (1, 3):
        run_act(lib, batch, M, N, K, kind, seed=M + K)
    run_act(lib, 1, M, N, K, kind, residual=False, b_t=True, lo=0.0, hi=float("inf"))


@pytest.mark.parametrize("threads", [2, 3])
def test_activation_with_threads(lib, threads):
    with _Threads(threads):
        run_act(lib, 1, 400, 45, 300, CLAMP, b_t=True)  # the team shares one packed B
        run_act(lib, 3, 250, 33, 70, HARDSWISH)          # the batch's one B, shared by the team
        run_act(lib, 3, 250, 33, 70, CLAMP, shared_b=False)  # each matrix's B in turn
        run_act(lib, 1, 16, 24, 2100, CLAMP)             # K split between the threads
        run_act(lib, 2, 384, 196, 64, CLAMP)             # rows in blocks for the team
        run_act(lib, 1, 7, 999, 64, HARDSWISH)           # few rows, columns split
