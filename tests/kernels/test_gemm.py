"""Correctness of the native batched SGEMM kernel against a float64 numpy reference."""

import ctypes
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

SENTINEL = np.float32(-12345.0)

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not available")

i64, ptr, f32 = ctypes.c_int64, ctypes.c_void_p, ctypes.c_float


def _build(kernel_library, march: str) -> ctypes.CDLL:
    lib = kernel_library(march, ["gemm.cpp"])
    lib.aotc_sgemm_batched.restype = None
    lib.aotc_sgemm_batched.argtypes = [i64] * 4 + [ptr, i64, i64, i64] * 2 + [ptr, i64, i64] + \
        [ptr, i64, i64, i64, f32, f32]
    lib.aotc_sgemm.restype = None
    lib.aotc_sgemm.argtypes = [i64] * 3 + [ptr, i64, i64] * 2 + [ptr, i64] + [ptr, i64, i64, f32, f32]
    lib.aotc_sgemm_packed_layout.restype = None
    lib.aotc_sgemm_packed_layout.argtypes = [ctypes.POINTER(i64)] * 2
    lib.aotc_sgemm_packed_floats.restype = i64
    lib.aotc_sgemm_packed_floats.argtypes = [i64, i64]
    lib.aotc_sgemm_pack_b.restype = None
    lib.aotc_sgemm_pack_b.argtypes = [i64, i64, ptr, i64, i64, ptr]
    lib.aotc_sgemm_prepacked.restype = None
    lib.aotc_sgemm_prepacked.argtypes = [i64] * 4 + [ptr, i64, i64, i64] + [ptr, ptr, i64, i64] + \
        [ptr, i64, i64, i64, f32, f32, ptr]
    lib.aotc_sgemm_fused.restype = None
    lib.aotc_sgemm_fused.argtypes = [i64] * 4 + [ptr, i64, i64, i64] * 2 + [ptr, i64, i64] + \
        [ptr, i64, i64, i64, f32, f32, ptr]
    return lib


# CPU flags each -march level needs before its build can run on this host
# (the same sets aotc checks before loading a model built for that level).
MARCH_FLAGS = {
    "x86-64-v4": {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx2", "fma"},
    "x86-64-v3": {"avx2", "fma", "bmi2"},
    "x86-64": set(),
}


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


@pytest.fixture(scope="module")
def builds(kernel_library):
    """march -> library, each built once for the module and only if this CPU can run it."""
    cache: dict[str, ctypes.CDLL] = {}

    def get(march: str) -> ctypes.CDLL:
        missing = MARCH_FLAGS[march] - _cpu_flags()
        if missing:
            pytest.skip(f"{march} build needs {' '.join(sorted(missing))}, which this CPU lacks")
        if march not in cache:
            cache[march] = _build(kernel_library, march)
        return cache[march]
    return get


# The AVX-512 (12x32 tiles, masked edges, unpacked few-row path) and AVX2 (6x16)
# micro-kernels; the general sweep runs against both.
@pytest.fixture(scope="module", params=["x86-64-v4", "x86-64-v3"])
def lib(request, builds):
    return builds(request.param)


@pytest.fixture(scope="module")
def lib_portable(builds):
    return builds("x86-64")


@pytest.fixture(scope="module", params=["x86-64-v4", "x86-64-v3", "x86-64"])
def any_lib(request, builds):
    return builds(request.param)


def _view(buf, offset, shape, strides):
    """Strided float64 view of a flat float32 buffer (strides in elements)."""
    if 0 in shape:
        return np.zeros(shape)
    return np.lib.stride_tricks.as_strided(
        buf[offset:], shape=shape, strides=[s * buf.itemsize for s in strides]).astype(np.float64)


def aligned_floats(n: int) -> np.ndarray:
    """n NaN floats, 64-byte aligned (the packed layout's contract)."""
    raw = np.full(n + 16, np.nan, np.float32)
    start = (-raw.ctypes.data) % 64 // 4
    return raw[start:start + n]


def run_case(lib, batch, M, N, K, *, a_t=False, b_t=False, shared_b=False, bias=None,
             alpha=1.0, beta=1.0, ldc_pad=3, use_batched=True, seed=0, prepacked=False):
    rng = np.random.default_rng(seed)
    # A: [batch, M, K] row-major, or stored transposed as [batch, K, M].
    A = rng.standard_normal(batch * M * K).astype(np.float32)
    sa = (M * K, 1, M) if a_t else (M * K, K, 1)
    # B: [K, N] row-major, or a transposed [N, K] weight (x @ W^T); optionally shared.
    nb = 1 if shared_b else batch
    B = rng.standard_normal(nb * K * N).astype(np.float32)
    sb = (0 if shared_b else K * N,) + ((1, K) if b_t else (N, 1))
    # bias kinds: (buffer length, batch stride, m stride, n stride)
    bias_layout = {
        None: (0, 0, 0, 0),
        "row": (N, 0, 0, 1),            # [N] broadcast over rows
        "col": (M, 0, 1, 0),            # [M, 1] broadcast over columns
        "full": (batch * M * N, M * N, N, 1),
        "full_t": (batch * M * N, M * N, 1, M),  # column-major matrix: odd strides
        "scalar": (1, 0, 0, 0),
    }[bias]
    bias_buf = rng.standard_normal(max(bias_layout[0], 1)).astype(np.float32)
    sbias = bias_layout[1:]
    # C with padded rows (ldc > N) and a gap between batches, all pre-filled with a sentinel.
    ldc = N + ldc_pad
    sc_batch = M * ldc + 5
    C = np.full(batch * sc_batch + 7, SENTINEL, dtype=np.float32)

    bias_ptr = bias_buf.ctypes.data if bias is not None else None
    if prepacked:  # B packed once by the kernel's packer, shared by the batch
        assert shared_b
        packed = aligned_floats(lib.aotc_sgemm_packed_floats(K, N))
        lib.aotc_sgemm_pack_b(K, N, B.ctypes.data, *sb[1:], packed.ctypes.data)
        saved = B.copy()
        B[:] = np.nan  # the call must not read the unpacked B
        lib.aotc_sgemm_prepacked(batch, M, N, K, A.ctypes.data, *sa, packed.ctypes.data,
                                 C.ctypes.data, sc_batch, ldc, bias_ptr, *sbias, alpha, beta,
                                 None)
        B[:] = saved
    elif use_batched:
        lib.aotc_sgemm_batched(batch, M, N, K, A.ctypes.data, *sa, B.ctypes.data, *sb,
                               C.ctypes.data, sc_batch, ldc, bias_ptr, *sbias, alpha, beta)
    else:
        assert batch == 1
        lib.aotc_sgemm(M, N, K, A.ctypes.data, *sa[1:], B.ctypes.data, *sb[1:],
                       C.ctypes.data, ldc, bias_ptr, *sbias[1:], alpha, beta)

    written = np.zeros(C.shape, dtype=bool)
    for b in range(batch):
        a = _view(A, b * sa[0], (M, K), sa[1:])
        w = _view(B, b * sb[0], (K, N), sb[1:])
        ref = alpha * (a @ w)
        if bias is not None:
            ref = ref + beta * _view(bias_buf, b * sbias[0], (M, N), sbias[1:])
        got = _view(C, b * sc_batch, (M, N), (ldc, 1))
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5 * np.sqrt(max(K, 1)) * 4,
                                   err_msg=f"batch {b}")
        for m in range(M):
            start = b * sc_batch + m * ldc
            written[start:start + N] = True
    # nothing outside the M x N rows of each C may have been touched
    assert np.all(C[~written] == SENTINEL)
    return C


BIAS_KINDS = [None, "row", "col", "full", "full_t", "scalar"]
# (A stored transposed, B stored transposed): B^T is the [N, K] weight of a linear layer
LAYOUTS = [(False, False), (False, True), (True, False), (True, True)]
SHAPES = [(1, 1, 1), (5, 7, 3), (6, 16, 1), (7, 17, 33), (13, 31, 257), (8, 16, 10),
          (64, 256, 300), (6, 16, 256), (12, 32, 512), (150, 40, 20), (40, 40, 1024),
          (3, 70, 96)]


@pytest.mark.parametrize("M,N,K", SHAPES)
@pytest.mark.parametrize("a_t,b_t", LAYOUTS)
def test_shapes_and_layouts(lib, M, N, K, a_t, b_t):
    run_case(lib, 1, M, N, K, a_t=a_t, b_t=b_t, bias="row")


@pytest.mark.parametrize("K", [1, 7, 257])
def test_edge_tiles(any_lib, K):
    """Every N from 1 to 33 (around the 16- and 32-wide tiles) against M around the
    6- and 12-row tiles: partial, masked and zero-padded edges. Layouts, bias kinds
    and alpha/beta rotate through the cases rather than multiplying them."""
    case = 0
    for M in (1, 2, 5, 6, 7, 11, 12, 13, 25):
        for N in range(1, 34):
            a_t, b_t = LAYOUTS[case % 4]
            run_case(any_lib, 1, M, N, K, a_t=a_t, b_t=b_t, bias=BIAS_KINDS[case % 6],
                     alpha=(1.0, -0.5, 2.0)[case % 3], beta=(1.0, 0.25)[case % 2],
                     ldc_pad=case % 3, seed=case)
            case += 1


FEW_ROWS = [1, 2, 3, 4, 5, 8, 31, 32, 33]


@pytest.mark.parametrize("M", FEW_ROWS)
def test_few_rows_against_transposed_weight(lib, M):
    """Few rows times a transposed [N, K] weight with long K: the AVX-512 build reads
    both operands in place here (dot products, 4 rows by 4 columns at a time)."""
    for case, (N, K) in enumerate([(1, 24 * M), (3, 100), (4, 1030), (5, 777), (17, 64 * M), (64, 513)]):
        run_case(lib, 1, M, N, K, b_t=True, bias=BIAS_KINDS[case % 6], alpha=0.5, beta=-1.5,
                 seed=case)
    run_case(lib, 3, M, 37, 300, b_t=True, shared_b=True, bias="full")


@pytest.mark.parametrize("M", FEW_ROWS)
def test_few_rows_against_row_major_b(lib, M):
    """Few rows times a row-major B: the AVX-512 build reads B in place here, in
    strips of 64 to 256 columns, with A in either layout."""
    for case, (N, K) in enumerate([(1, 5), (63, 1), (64, 40), (65, 7), (129, 33), (300, 70)]):
        run_case(lib, 1, M, N, K, a_t=bool(case % 2), bias=BIAS_KINDS[case % 6], alpha=-0.5,
                 beta=2.0, seed=case)
    run_case(lib, 2, M, 200, 20, shared_b=True, bias="col")


@pytest.mark.parametrize("bias", BIAS_KINDS)
@pytest.mark.parametrize("M,N,K", [(5, 7, 3), (13, 31, 257), (64, 48, 300)])
def test_bias_kinds(lib, bias, M, N, K):
    run_case(lib, 1, M, N, K, b_t=True, bias=bias, alpha=0.5, beta=-2.0)


@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (0.0, 1.0), (-1.5, 0.25), (2.0, 3.0)])
def test_alpha_beta(lib, alpha, beta):
    run_case(lib, 1, 37, 45, 300, bias="full", alpha=alpha, beta=beta)


@pytest.mark.parametrize("bias", [None, "row", "full"])
def test_k_zero(lib, bias):
    run_case(lib, 2, 9, 20, 0, bias=bias, beta=1.5)


@pytest.mark.parametrize("M,N,batch", [(0, 5, 1), (5, 0, 1), (4, 4, 0)])
def test_empty_writes_nothing(lib, M, N, batch):
    run_case(lib, batch, M, N, 7, bias="row")


@pytest.mark.parametrize("batch", [2, 3, 5, 48])
@pytest.mark.parametrize("shared_b,b_t,bias", [(False, False, "full"), (True, True, "row"),
                                                 (False, True, None)])
def test_batched(lib, batch, shared_b, b_t, bias):
    run_case(lib, batch, 19, 33, 64, shared_b=shared_b, b_t=b_t, bias=bias)


def test_batched_attention_shape(lib):
    run_case(lib, 12, 128, 128, 64, bias=None, alpha=0.125)


def test_single_convenience_entry(lib):
    run_case(lib, 1, 23, 41, 77, b_t=True, bias="col", alpha=0.75, beta=2.0, use_batched=False)


def test_large(lib):
    run_case(lib, 1, 256, 384, 512, bias="row")


def test_small_m_wide(lib):
    run_case(lib, 1, 16, 1030, 700, b_t=True, bias="row")


class _Threads:
    """OpenMP's thread count set for the block, restored after it."""

    def __init__(self, n: int):
        self.gomp = ctypes.CDLL("libgomp.so.1")
        self.n = n

    def __enter__(self):
        self.before = self.gomp.omp_get_max_threads()
        self.gomp.omp_set_num_threads(self.n)

    def __exit__(self, *exc):
        self.gomp.omp_set_num_threads(self.before)


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_thread_counts(lib, threads):
    """Every thread-grid split must cover C exactly once, including odd team sizes."""
    with _Threads(threads):
        run_case(lib, 1, 157, 203, 130, b_t=True, bias="full")
        run_case(lib, 1, 7, 999, 64, bias="row")
        run_case(lib, 3, 40, 70, 90, shared_b=True, bias="col")
        run_case(lib, 9, 30, 20, 50, a_t=True, bias=None)
        # tall C: the team packs B once, shared (per matrix, or once for a shared B)
        run_case(lib, 1, 400, 45, 300, b_t=True, bias="row")
        run_case(lib, 3, 250, 33, 70, bias="full")
        run_case(lib, 3, 250, 33, 70, a_t=True, shared_b=True, bias="col")
        # the team takes blocks of rows one at a time: several blocks and K slices each
        run_case(lib, 1, 700, 150, 1100, bias="row", seed=1)
        run_case(lib, 2, 433, 77, 530, b_t=True, shared_b=True, bias="full", seed=2)
        # rows in as many blocks as a multiple of the team (a 1x1 convolution's 384 output
        # channels on a 14x14 plane: 4 blocks of 96 on 2 threads), and a few rows past MC
        run_case(lib, 1, 384, 196, 64, bias="row", seed=3)
        run_case(lib, 1, 150, 200, 40, bias="col", seed=4)


@pytest.mark.parametrize("b_t", [False, True])
def test_portable_fallback(lib_portable, b_t):
    run_case(lib_portable, 2, 13, 31, 257, b_t=b_t, bias="full_t", alpha=0.5, beta=2.0)


# Prepacked B: the kernel's own packer, then products that read only the packed panels.
PACKED_SHAPES = [(1, 1, 1), (1, 33, 300), (3, 17, 7), (5, 64, 257), (12, 32, 256), (13, 31, 513),
                 (40, 100, 1030), (64, 48, 300), (150, 70, 20),
                 # 17-24 columns in strips of 16 and 8 lanes (AVX-512): rows of a 1x1
                 # convolution's 24 channels last, a row group's edges, two K slices
                 (157, 24, 96), (29, 20, 600),
                 # row tiles (AVX-512): up to 160 columns or K up to 16, chunks of 6 vectors
                 # and a last one of 1-5 (a partial vector), leftover rows of 4, 2 and 1, two
                 # K slices
                 (100, 200, 16), (49, 160, 960), (30, 144, 8), (25, 28, 5), (8, 40, 64),
                 (7, 96, 300), (61, 81, 33), (11, 30, 40), (23, 18, 12)]


@pytest.mark.parametrize("M,N,K", PACKED_SHAPES)
@pytest.mark.parametrize("b_t", [False, True])
def test_prepacked(any_lib, M, N, K, b_t):
    for case, bias in enumerate(["row", None, "col", "full_t"]):
        run_case(any_lib, 1, M, N, K, b_t=b_t, a_t=bool(case % 2), shared_b=True, bias=bias,
                 alpha=(1.0, 0.5)[case % 2], beta=(1.0, -2.0)[case % 2], seed=case,
                 prepacked=True)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_prepacked_batched_and_threaded(lib, threads):
    with _Threads(threads):
        run_case(lib, 3, 37, 45, 300, shared_b=True, bias="full", prepacked=True)
        run_case(lib, 1, 157, 203, 130, b_t=True, shared_b=True, bias="row", prepacked=True)
        run_case(lib, 2, 9, 20, 0, shared_b=True, bias="row", beta=1.5, prepacked=True)


@pytest.mark.parametrize("march", ["x86-64-v4", "x86-64-v3", "x86-64"])
@pytest.mark.parametrize("K,N,b_t", [(1, 1, False), (7, 33, True), (300, 70, False),
                                     (513, 48, True)])
def test_pack_layout_matches_the_compiler(builds, march, K, N, b_t):
    """The compiler writes packed weights into the package (scheduler/prepack.py); the
    kernel packs swapped ones at run time: both must produce the same bytes, in the
    layout of the build's own panel width."""
    from aotc.ir.nodes import PackedGemmB
    from aotc.scheduler.prepack import pack_panels
    from aotc.target import target_of_arch

    lib = builds(march)
    nr, kc = i64(), i64()
    lib.aotc_sgemm_packed_layout(ctypes.byref(nr), ctypes.byref(kc))
    target = target_of_arch(march)
    assert (nr.value, kc.value) == (target.gemm_nr, target.gemm_kc)
    rng = np.random.default_rng(K * N)
    data = rng.standard_normal(K * N + 5).astype(np.float32)
    sb_k, sb_n = (1, K) if b_t else (N, 1)
    packing = PackedGemmB(K, N, 5, sb_k, sb_n, nr.value, kc.value)
    ours = aligned_floats(lib.aotc_sgemm_packed_floats(K, N))
    assert ours.size == packing.floats()
    lib.aotc_sgemm_pack_b(K, N, data[5:].ctypes.data, sb_k, sb_n, ours.ctypes.data)
    np.testing.assert_array_equal(ours, pack_panels(data, packing))


# A fused epilogue: the kernel calls it on each finished block of C.
EPILOGUE_FN = ctypes.CFUNCTYPE(None, ptr, ctypes.POINTER(f32), i64, i64, i64, i64, i64)


class Epilogue(ctypes.Structure):
    _fields_ = [("fn", EPILOGUE_FN), ("ctx", ptr)]


def run_fused(lib, batch, M, N, K, *, b_t=False, prepacked=False, bias="row", seed=0):
    """C = f(A @ B + bias) with f(v, row, col) = 3v + row - 2col applied by the epilogue;
    every element must pass through it exactly once, after its whole sum."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((batch, M, K)).astype(np.float32)
    B = rng.standard_normal((N, K) if b_t else (K, N)).astype(np.float32)  # shared by the batch
    sb = (1, K) if b_t else (N, 1)
    bias_buf = rng.standard_normal(N).astype(np.float32)
    C = np.full((batch, M, N), SENTINEL, np.float32)
    seen = np.zeros((batch * M, N), np.int64)
    lock = threading.Lock()

    errors: list[BaseException] = []

    def apply(ctx, c, ldc, row, col, rows, cols):
        try:  # ctypes would only print what a callback raises
            block = np.ctypeslib.as_array(c, shape=((rows - 1) * ldc + cols,))
            with lock:
                seen[row:row + rows, col:col + cols] += 1
            for r in range(rows):
                line = block[r * ldc:r * ldc + cols]
                line[:] = 3 * line + (row + r) - 2 * (col + np.arange(cols))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    ep = Epilogue(EPILOGUE_FN(apply), None)
    bias_ptr = bias_buf.ctypes.data if bias else None
    if prepacked:
        packed = aligned_floats(lib.aotc_sgemm_packed_floats(K, N))
        lib.aotc_sgemm_pack_b(K, N, B.ctypes.data, *sb, packed.ctypes.data)
        lib.aotc_sgemm_prepacked(batch, M, N, K, A.ctypes.data, M * K, K, 1, packed.ctypes.data,
                                 C.ctypes.data, M * N, N, bias_ptr, 0, 0, 1, 1.0, 1.0,
                                 ctypes.byref(ep))
    else:
        lib.aotc_sgemm_fused(batch, M, N, K, A.ctypes.data, M * K, K, 1, B.ctypes.data, 0, *sb,
                             C.ctypes.data, M * N, N, bias_ptr, 0, 0, 1, 1.0, 1.0,
                             ctypes.byref(ep))
    w = (B.T if b_t else B).astype(np.float64)
    ref = A.astype(np.float64) @ w + (bias_buf if bias else 0.0)
    rows = np.arange(batch * M).reshape(batch, M, 1)
    ref = 3 * ref + rows - 2 * np.arange(N)
    assert not errors, errors
    np.testing.assert_array_equal(seen, 1)
    np.testing.assert_allclose(C, ref, rtol=1e-4, atol=1e-4 * np.sqrt(max(K, 1)) * 4)
    return C


@pytest.mark.parametrize("M,N,K", [(1, 40, 300), (5, 7, 3), (13, 31, 257), (40, 100, 600),
                                   (150, 70, 20), (9, 20, 0)])
@pytest.mark.parametrize("b_t,prepacked", [(False, False), (True, False), (True, True)])
def test_fused_epilogue(any_lib, M, N, K, b_t, prepacked):
    """Every path (few rows in place, packed tiles, K slices, K = 0) finishes each element
    once, the epilogue seeing its whole sum and bias, at its own row and column."""
    for batch in (1, 3):
        run_fused(any_lib, batch, M, N, K, b_t=b_t, prepacked=prepacked, bias="row" if K % 2
                  else None, seed=M + K)


@pytest.mark.parametrize("threads", [2, 3])
def test_fused_epilogue_threaded(lib, threads):
    with _Threads(threads):
        run_fused(lib, 1, 400, 45, 300, b_t=True)  # the team shares one packed B
        run_fused(lib, 3, 250, 33, 70)
        run_fused(lib, 2, 64, 200, 513, b_t=True, prepacked=True)
        run_fused(lib, 1, 7, 999, 64)
        run_fused(lib, 2, 196, 128, 300, prepacked=True)  # row tiles, blocks to the callback


# Narrow C (few columns) and short K: dot products against a few columns of B (up to 4),
# register strips against a row-major view of B (up to one panel: 32 or 16 columns), whatever
# the rows; 33 columns go to the packed tiles. K of 600 spans two K slices of the packed layout.
NARROW_M = [1, 5, 13, 31, 256, 257]
NARROW_N = [1, 2, 3, 4, 7, 16, 17, 24, 32, 33]
NARROW_K = [1, 3, 10, 16, 33, 600]


@pytest.mark.parametrize("K", NARROW_K)
@pytest.mark.parametrize("N", NARROW_N)
@pytest.mark.parametrize("M", NARROW_M)
def test_narrow_shapes(lib, M, N, K):
    """Every layout of B (transposed weight, row-major, prepacked from either), A row-major
    or transposed, each bias kind, alpha and beta."""
    cases = [  # (a_t, b_t, prepacked, bias, alpha, beta, padding of C's rows)
        (False, True, False, "row", 1.0, 1.0, 3),
        (False, True, False, "row", -1.5, 0.5, 0),  # C's rows contiguous
        (False, False, False, "col", 0.5, -2.0, 0),
        (True, True, False, None, 1.0, 1.0, 3),
        (True, False, False, "full_t", -1.5, 0.25, 3),
        (False, True, True, "row", 1.0, 1.0, 3),
        (False, False, True, "col", 2.0, 3.0, 3),
        (True, True, True, "full", 1.0, 0.0, 0),
        (False, True, True, "scalar", 0.0, 1.0, 0),
        (False, False, True, None, 2.0, 1.0, 0),
    ]
    for seed, (a_t, b_t, prepacked, bias, alpha, beta, pad) in enumerate(cases):
        run_case(lib, 1, M, N, K, a_t=a_t, b_t=b_t, shared_b=prepacked, bias=bias, alpha=alpha,
                 beta=beta, prepacked=prepacked, ldc_pad=pad, seed=seed)


@pytest.mark.parametrize("M,N,K", [(256, 16, 10), (256, 1, 16), (257, 3, 600), (13, 2, 33),
                                   (31, 17, 3), (5, 4, 64), (64, 24, 600)])
def test_narrow_batched(lib, M, N, K):
    run_case(lib, 3, M, N, K, b_t=True, bias="full")
    run_case(lib, 2, M, N, K, shared_b=True, bias="col", prepacked=True)


@pytest.mark.parametrize("M,N,K", [(256, 16, 10), (256, 1, 16), (257, 1, 600), (13, 2, 33),
                                   (31, 4, 64), (5, 7, 600), (257, 17, 3), (100, 32, 600)])
@pytest.mark.parametrize("b_t,prepacked", [(False, False), (True, False), (True, True)])
def test_narrow_fused_epilogue(lib, M, N, K, b_t, prepacked):
    """The narrow paths finish each element once, after all of its K slices."""
    for batch in (1, 2):
        run_fused(lib, batch, M, N, K, b_t=b_t, prepacked=prepacked,
                  bias="row" if K % 2 else None, seed=M + N + K)


@pytest.mark.parametrize("threads", [2, 3])
def test_narrow_threaded(lib, threads):
    """Teams split the rows of a narrow C (sharing one packed B, or a prepacked one)."""
    with _Threads(threads):
        run_case(lib, 1, 1000, 1, 600, b_t=True, bias="row")
        run_case(lib, 1, 700, 16, 300, b_t=True, bias="col")
        run_case(lib, 1, 900, 3, 700, shared_b=True, bias="full", prepacked=True)
        run_case(lib, 1, 801, 12, 520, a_t=True, shared_b=True, bias="row", prepacked=True)
        run_case(lib, 1, 600, 64, 300, b_t=True, bias="row")  # a 32-column panel per thread
        run_fused(lib, 1, 1000, 2, 300, b_t=True)
        run_fused(lib, 2, 500, 9, 600, prepacked=True)


# Split-K: a small C with a long K; at several threads the team splits K into the slices of
# the packed layout, sums each slice apart and reduces the sums in slice order, so a result
# does not depend on which thread took which slice nor on how many threads there are.
# The last four are edges the team may leave to the grid: K of 2 or 3 slices (fewer than
# the threads), a dot product too short to share, a C the grid splits well enough.
SPLIT_K_SHAPES = [(8, 32, 8192), (1, 8, 20000), (2, 3, 30000), (13, 1, 5000), (5, 7, 10000),
                  (6, 16, 9000), (3, 40, 1100), (3, 40, 1030), (1, 1, 4100), (16, 128, 3000)]
# Shapes that take split-K at both 2 and 3 threads, on both ISA builds, prepacked or not.
SPLIT_K_ALWAYS = [(8, 16, 16384), (2, 3, 30000), (1, 8, 20000), (6, 16, 9000), (5, 7, 10000)]


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("M,N,K", SPLIT_K_SHAPES)
def test_split_k(lib, threads, M, N, K):
    """Long K, small C: every layout of B, each bias kind, alpha and beta, batch 1 and a
    batch smaller than the team."""
    cases = [  # (batch, a_t, b_t, prepacked, bias, alpha, beta)
        (1, False, True, False, "row", 1.0, 1.0),
        (1, False, False, False, "col", 0.5, -2.0),
        (1, True, True, True, "full_t", -1.5, 0.25),
        (1, False, False, True, "scalar", 2.0, 3.0),
        (1, True, False, False, None, 1.0, 0.0),
        (2, False, True, True, "full", 1.0, 1.0),
        (2, False, False, False, "row", 0.0, 1.0),
    ]
    with _Threads(threads):
        for seed, (batch, a_t, b_t, prepacked, bias, alpha, beta) in enumerate(cases):
            run_case(lib, batch, M, N, K, a_t=a_t, b_t=b_t, shared_b=prepacked or seed % 2 == 1,
                     bias=bias, alpha=alpha, beta=beta, prepacked=prepacked, seed=seed)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("M,N,K", [(8, 32, 8192), (1, 8, 20000), (13, 1, 5000), (5, 7, 10000),
                                   (3, 40, 1100)])
@pytest.mark.parametrize("b_t,prepacked", [(False, False), (True, False), (True, True)])
def test_split_k_fused_epilogue(lib, threads, M, N, K, b_t, prepacked):
    """The epilogue runs once per element, after the reduction of all K slices."""
    with _Threads(threads):
        for batch in (1, 2):
            run_fused(lib, batch, M, N, K, b_t=b_t, prepacked=prepacked,
                      bias="row" if batch == 1 else None, seed=M + N + K)


@pytest.mark.parametrize("M,N,K", SPLIT_K_ALWAYS)
@pytest.mark.parametrize("prepacked", [False, True])
def test_split_k_deterministic(lib, M, N, K, prepacked):
    """20 calls give the same bits, and 2 and 3 threads give the same bits as each other
    (the sums of the slices are reduced in slice order whatever the team)."""
    def call(threads):
        with _Threads(threads):
            return run_case(lib, 1, M, N, K, b_t=True, shared_b=prepacked, bias="row",
                            alpha=0.75, beta=1.5, prepacked=prepacked)
    first = call(2)
    for _ in range(19):
        np.testing.assert_array_equal(call(2), first)
    for _ in range(20):
        np.testing.assert_array_equal(call(3), first)


def test_split_k_portable(lib_portable):
    with _Threads(2):
        run_case(lib_portable, 1, 8, 32, 4100, b_t=True, bias="row", alpha=0.5, beta=2.0)
        run_case(lib_portable, 1, 3, 17, 5000, shared_b=True, bias="col", prepacked=True)
        run_fused(lib_portable, 2, 5, 7, 3000, prepacked=True)
