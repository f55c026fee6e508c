"""kernels/gemm_bf16.cpp through its C ABI, built for every -march level this CPU runs (the
AVX-512 build's vdpbf16ps kernel only where the CPU has avx512_bf16; the others keep the
portable loop): the packed layout byte for byte against the compiler's numpy packer, and
products against a float64 product of the bfloat16-rounded operands, on odd shapes, with
alpha, beta, bias strides and batches."""
from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from aotc.ir.nodes import PackedGemmB
from aotc.scheduler.precision import pack_panels_bf16, to_bf16_bits
from aotc.target.host import cpu_flags
from aotc.target.x86_64 import BF16_FEATURE

KERNEL_DIR = Path(__file__).resolve().parents[2] / "src" / "aotc" / "kernels"
FLAGS = ["-O3", "-fopenmp", "-fPIC", "-shared", "-std=c++17", "-Wall", "-Wextra", "-Werror"]
NEEDS = {"x86-64-v4": {"avx512f", "avx512bw", "avx512vl", "avx512dq", BF16_FEATURE},
         "x86-64-v3": {"avx2", "fma", "bmi2"}, "x86-64": set()}
NR = {"x86-64-v4": 32, "x86-64-v3": 16, "x86-64": 16}

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not available")
i64, ptr, f32 = ctypes.c_int64, ctypes.c_void_p, ctypes.c_float


@pytest.fixture(scope="module", params=list(NEEDS))
def lib(request, tmp_path_factory):
    march = request.param
    missing = NEEDS[march] - cpu_flags()
    if missing:
        pytest.skip(f"{march} bf16 build needs {sorted(missing)}, which this CPU lacks")
    path = tmp_path_factory.mktemp(march) / "libgemm_bf16.so"
    res = subprocess.run(["g++", f"-march={march}", *FLAGS, "-I", str(KERNEL_DIR),
                          str(KERNEL_DIR / "gemm_bf16.cpp"), "-o", str(path)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    out = ctypes.CDLL(str(path))
    out.aotc_sgemm_packed_bf16_elems.restype = i64
    out.aotc_sgemm_packed_bf16_elems.argtypes = [i64, i64]
    out.aotc_sgemm_pack_b_bf16.restype = None
    out.aotc_sgemm_pack_b_bf16.argtypes = [i64, i64, ptr, i64, i64, ptr]
    out.aotc_sgemm_prepacked_bf16.restype = None
    out.aotc_sgemm_prepacked_bf16.argtypes = [i64] * 4 + [ptr, i64, i64, i64, ptr, ptr, i64, i64] \
        + [ptr, i64, i64, i64, f32, f32, ptr]
    out.nr = NR[march]
    return out


def _rounded(x: np.ndarray) -> np.ndarray:
    return (to_bf16_bits(x).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _pack(lib, w: np.ndarray) -> np.ndarray:
    k, n = w.shape
    packed = np.full(lib.aotc_sgemm_packed_bf16_elems(k, n), 0xFFFF, np.uint16)
    lib.aotc_sgemm_pack_b_bf16(k, n, w.ctypes.data, n, 1, packed.ctypes.data)
    return packed


@pytest.mark.parametrize("k,n", [(1, 1), (3, 33), (37, 45), (1031, 70), (1024, 64)])
def test_layout_matches_the_compilers_packer(lib, k, n):
    w = np.random.default_rng(k).standard_normal((k, n)).astype(np.float32)
    special = np.array([np.nan, np.inf, -0.0], np.float32)[:w.size]
    w.reshape(-1)[:special.size] = special
    expected = pack_panels_bf16(w, PackedGemmB(k, n, 0, n, 1, lib.nr, 512, "bfloat16"))
    np.testing.assert_array_equal(_pack(lib, w), expected)


@pytest.mark.parametrize("batch,m,n,k,bias", [
    (1, 1, 8, 1, "row"), (1, 13, 45, 37, "row"), (2, 29, 70, 1031, "none"),
    (1, 150, 33, 5, "column"), (3, 7, 40, 64, "matrix"), (1, 301, 65, 530, "scalar"),
    (2, 17, 50, 9, "transposed"),
])
def test_products_match_rounded_operands(lib, batch, m, n, k, bias):
    rng = np.random.default_rng(m * n + k)
    a = rng.standard_normal((batch, m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    full = rng.standard_normal((batch, m, n)).astype(np.float32)
    # (pointer array, batch, m, n strides) for C = alpha*A@W + beta*bias
    biases = {"none": (None, 0, 0, 0), "row": (full[0, 0], 0, 0, 1),
              "column": (full[0, :, 0].copy(), 0, 1, 0), "matrix": (full, m * n, n, 1),
              "scalar": (full[0, 0, :1], 0, 0, 0),
              # column-major: the tile goes through the element-wise store
              "transposed": (np.ascontiguousarray(full[0].T), 0, 1, m)}
    b, sbb, sbm, sbn = biases[bias]
    c = np.full((batch, m, n), -12345.0, np.float32)
    alpha, beta = 0.75, -1.5
    packed = _pack(lib, w)  # held: the call reads its address
    lib.aotc_sgemm_prepacked_bf16(batch, m, n, k, a.ctypes.data, m * k, k, 1,
                                  packed.ctypes.data, c.ctypes.data, m * n, n,
                                  None if b is None else b.ctypes.data, sbb, sbm, sbn,
                                  alpha, beta, None)
    ref = alpha * (_rounded(a) @ _rounded(w))
    if b is not None:
        ref = ref + beta * np.lib.stride_tricks.as_strided(
            b.astype(np.float64), (batch, m, n), (sbb * 8, sbm * 8, sbn * 8))
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5 * np.sqrt(k))
