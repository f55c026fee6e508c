"""kernels/fft.cpp through its C ABI, built with -Wall -Wextra -Werror for every -march level
this CPU runs: c2c both ways, r2c and c2r against numpy's float64 transforms on lengths with
small factors, large primes (Bluestein) and 1, along inner and outer dims, every norm code,
one line at a time (6 lines) and in SIMD groups of lines (35: the last group padded), and
the same bits at every thread count."""
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
LENGTHS = [1, 2, 3, 5, 7, 12, 17, 31, 37, 60, 74, 97, 128, 243, 257, 1000, 1024, 5005, 4099]
SUFFIX = {np.float32: "f32", np.float64: "f64"}
COMPLEX = {np.float32: np.complex64, np.float64: np.complex128}

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not available")
i64, i32, ptr = ctypes.c_int64, ctypes.c_int32, ctypes.c_void_p


@pytest.fixture(scope="module", params=list(NEEDS))
def lib(request, tmp_path_factory):
    march = request.param
    missing = NEEDS[march] - cpu_flags()
    if missing:
        pytest.skip(f"{march} needs {sorted(missing)}, which this CPU lacks")
    path = tmp_path_factory.mktemp(march) / "libfft.so"
    res = subprocess.run(["g++", f"-march={march}", *FLAGS, "-I", str(KERNEL_DIR),
                          str(KERNEL_DIR / "fft.cpp"), "-o", str(path)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    out = ctypes.CDLL(str(path))
    for t in SUFFIX.values():
        for kind in ("c2c", "r2c", "c2r"):
            fn = getattr(out, f"aotc_fft_{kind}_{t}")
            fn.restype = ctypes.c_int
            fn.argtypes = [i64, i64, i64, i32 if kind == "c2c" else i64, i32, i64, ptr, ptr]
    omp = ctypes.CDLL("libgomp.so.1")
    out.set_threads = omp.omp_set_num_threads
    return out


def _scale(norm: int, size: int) -> float:
    return (1.0, size ** -0.5, 1.0 / size)[norm]


def _tol(dt, n: int) -> float:
    # relative to the largest output: a few ulps times log n
    return (3e-6 if dt is np.float32 else 1e-14) * max(1.0, np.log2(n))


@pytest.mark.parametrize("outer,inner", [(2, 3), (5, 7)])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n", LENGTHS)
def test_transforms_match_numpy(lib, dt, n, outer, inner):
    rng = np.random.default_rng(n)
    norm = n % 3
    x = (rng.standard_normal((outer, n, inner))
         + 1j * rng.standard_normal((outer, n, inner))).astype(COMPLEX[dt])
    wide = x.astype(np.complex128)
    s = SUFFIX[dt]
    for inverse in (0, 1):
        y = np.empty_like(x)
        assert getattr(lib, f"aotc_fft_c2c_{s}")(outer, n, inner, inverse, norm, n,
                                                 x.ctypes.data, y.ctypes.data) == 0
        want = (np.fft.ifft(wide, axis=1) * n if inverse else np.fft.fft(wide, axis=1))
        want *= _scale(norm, n)
        assert np.abs(y - want).max() <= _tol(dt, n) * np.abs(want).max(), inverse
    real = np.ascontiguousarray(x.real)
    half = n // 2 + 1
    for kept in (half, n):
        y = np.empty((outer, kept, inner), COMPLEX[dt])
        assert getattr(lib, f"aotc_fft_r2c_{s}")(outer, n, inner, kept, norm, n,
                                                 real.ctypes.data, y.ctypes.data) == 0
        want = np.fft.fft(real.astype(np.float64), axis=1)[:, :kept] * _scale(norm, n)
        assert np.abs(y - want).max() <= _tol(dt, n) * np.abs(want).max()
    for given in (half, n):  # c2r reads the first n // 2 + 1 values of either
        spec = np.ascontiguousarray(x[:, :given])
        y = np.empty((outer, n, inner), dt)
        assert getattr(lib, f"aotc_fft_c2r_{s}")(outer, given, inner, n, norm, n,
                                                 spec.ctypes.data, y.ctypes.data) == 0
        want = np.fft.irfft(wide[:, :half], n=n, axis=1) * n * _scale(norm, n)
        assert np.abs(y - want).max() <= _tol(dt, n) * max(1.0, np.abs(want).max())


@pytest.mark.parametrize("n,inner", [(257, 1), (1000, 7), (96, 64)])
def test_same_bits_at_every_thread_count(lib, n, inner):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, n, inner, 2)).astype(np.float32)
    outs = []
    for threads in (1, 2, 3):
        lib.set_threads(threads)
        y = np.empty_like(x)
        assert lib.aotc_fft_c2c_f32(40, n, inner, 0, 1, n, x.ctypes.data, y.ctypes.data) == 0
        outs.append(y)
    lib.set_threads(2)
    assert all(np.array_equal(outs[0], o) for o in outs[1:])
