"""Small GEMMs (few columns, short K), as small models call them, against another revision.

    python benchmarks/gemm_small.py                     # this tree against HEAD, both ISA builds
    python benchmarks/gemm_small.py --base 02f087e --march x86-64-v4 --reps 15
    python benchmarks/gemm_small.py --base main --shapes skinny --threads 2

For each -march level this CPU runs, the script builds the shipped SGEMM
(src/aotc/kernels/gemm.cpp) twice, from this tree and from the kernels of git revision
--base, and times both on each shape with calls alternating, in the calling thread's CPU
time at 1 thread. Each call goes through ctypes, whose cost (a call with batch 0, which
returns at once) is measured the same way and subtracted. The shapes are those of
benchmarks/models.py ReadmeModel at batch 256, Linear(10, 16) with its weight prepacked and
Linear(16, 1) reading its weight in place, then a few neighbours; the figures are medians
of --reps rounds, with the spread. With --shapes skinny, the shapes are a small C with a
long K (a classifier head, a reduction-like matmul: the split-K path), with --shapes
standard some rows of benchmarks/gemm.py (1024^3, 64x4096x4096, GEMVs), and with --threads
above 1 the times are wall clock (the team's), not the calling thread's CPU time: the median
call of each round. Prints only.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
KERNELS = "src/aotc/kernels"
SOURCES = ["gemm.cpp", "gemm_microkernels.h", "gemm_panels.h", "gemm_packing.h", "gemm_unpacked.h",
           "aotc_kernels.h"]
MARCH_FEATURES = {"x86-64-v4": {"avx512f", "avx512bw", "avx512vl", "avx512dq", "fma"},
                  "x86-64-v3": {"avx2", "fma", "bmi2"}}
# (B prepacked, M, N, K): the two GEMMs of ReadmeModel at batch 256 first
SHAPES = [(True, 256, 16, 10), (False, 256, 1, 16), (True, 256, 4, 10), (False, 256, 2, 16),
          (False, 1024, 4, 4096), (True, 1024, 16, 1024), (True, 256, 32, 10), (True, 4096, 32, 512)]
SKINNY_SHAPES = [(True, 1, 64, 16384), (False, 1, 64, 16384), (True, 8, 32, 8192),
                 (False, 8, 32, 8192), (True, 16, 128, 12544), (False, 16, 128, 12544),
                 (True, 64, 64, 65536), (False, 64, 64, 65536), (True, 4, 10, 25088),
                 (False, 1, 1, 65536)]
# rows of benchmarks/gemm.py, which no small-C path takes: to check they are unchanged
STANDARD_SHAPES = [(False, 1024, 1024, 1024), (True, 64, 4096, 4096), (True, 1, 4096, 4096),
                   (False, 1, 4096, 4096)]

i64, f32, ptr = ctypes.c_int64, ctypes.c_float, ctypes.c_void_p


def cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def build(src_dir: Path, march: str, out: Path) -> ctypes.CDLL:
    subprocess.run(["g++", f"-march={march}", "-O3", "-fopenmp", "-fPIC", "-shared",
                    "-std=c++17", "-I", str(src_dir), str(src_dir / "gemm.cpp"), "-o", str(out)],
                   check=True)
    lib = ctypes.CDLL(str(out))
    lib.aotc_sgemm_fused.argtypes = [i64] * 4 + [ptr, i64, i64, i64] * 2 + [ptr, i64, i64] + \
        [ptr, i64, i64, i64, f32, f32, ptr]
    lib.aotc_sgemm_prepacked.argtypes = [i64] * 4 + [ptr, i64, i64, i64, ptr, ptr, i64, i64] + \
        [ptr, i64, i64, i64, f32, f32, ptr]
    lib.aotc_sgemm_pack_b.argtypes = [i64, i64, ptr, i64, i64, ptr]
    lib.aotc_sgemm_packed_floats.restype = i64
    lib.aotc_sgemm_packed_floats.argtypes = [i64, i64]
    return lib


def aligned(n: int) -> np.ndarray:
    raw = np.zeros(n + 16, np.float32)
    start = (-raw.ctypes.data) % 64 // 4
    return raw[start:start + n]


def make_call(lib: ctypes.CDLL, prepacked: bool, M: int, N: int, K: int,
              keep: list) -> Callable[[], None]:
    """y = x @ W^T + bias for a [N, K] weight, checked once against numpy."""
    rng = np.random.default_rng(M * N * K)
    x, w = rng.random((M, K), np.float32), rng.random((N, K), np.float32)
    bias, y = rng.random(N, dtype=np.float32), np.zeros((M, N), np.float32)
    keep.extend([x, w, bias, y])
    if prepacked:
        packed = aligned(lib.aotc_sgemm_packed_floats(K, N))
        lib.aotc_sgemm_pack_b(K, N, w.ctypes.data, 1, K, packed.ctypes.data)
        keep.append(packed)
        fn, args = lib.aotc_sgemm_prepacked, (1, M, N, K, x.ctypes.data, 0, K, 1, packed.ctypes.data,
                                              y.ctypes.data, 0, N, bias.ctypes.data, 0, 0, 1,
                                              1.0, 1.0, None)
    else:
        fn, args = lib.aotc_sgemm_fused, (1, M, N, K, x.ctypes.data, 0, K, 1, w.ctypes.data, 0,
                                          1, K, y.ctypes.data, 0, N, bias.ctypes.data, 0, 0, 1,
                                          1.0, 1.0, None)
    fn(*args)
    np.testing.assert_allclose(y, x.astype(np.float64) @ w.T + bias, rtol=1e-4, atol=1e-4 * K)
    return lambda: fn(*args)


def per_call_us(fn: Callable[[], None], iters: int, clock: Callable[[], float] = time.thread_time) -> float:
    if clock is time.perf_counter:  # wall clock: the median call, so that a call the
        calls = []                  # scheduler stalled (a shared machine) counts once
        for _ in range(iters):
            start = clock()
            fn()
            calls.append(clock() - start)
        return statistics.median(calls) * 1e6
    start = clock()
    for _ in range(iters):
        fn()
    return (clock() - start) / iters * 1e6


def empty_call(lib: ctypes.CDLL) -> Callable[[], None]:
    """A call that returns at once (batch 0): what ctypes alone costs."""
    args = (0, 1, 1, 1, 64, 0, 0, 0, 64, 0, 0, 0, 64, 0, 0, 64, 0, 0, 0, 1.0, 1.0, None)
    return lambda: lib.aotc_sgemm_fused(*args)


def base_sources(rev: str, out: Path) -> Path:
    for name in SOURCES:
        done = subprocess.run(["git", "show", f"{rev}:{KERNELS}/{name}"], cwd=ROOT,
                              capture_output=True, text=True)
        if done.returncode == 0:  # gemm_unpacked.h was split out of gemm.cpp later
            (out / name).write_text(done.stdout)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", default="HEAD", help="git revision whose kernels to compare with")
    ap.add_argument("--march", default="x86-64-v4,x86-64-v3")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--shapes", choices=["small", "skinny", "standard"], default="small")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    shapes = {"small": SHAPES, "skinny": SKINNY_SHAPES, "standard": STANDARD_SHAPES}[args.shapes]
    clock = time.thread_time if args.threads == 1 else time.perf_counter
    flags = cpu_flags()
    with tempfile.TemporaryDirectory() as tmp:
        base_dir = base_sources(args.base, Path(tmp))
        print(f"load average (1 min): {os.getloadavg()[0]:.2f}")
        for march in args.march.split(","):
            if MARCH_FEATURES[march] - flags:
                print(f"{march}: skipped, this CPU lacks it")
                continue
            libs = [build(base_dir, march, Path(tmp) / f"base_{march}.so"),
                    build(ROOT / KERNELS, march, Path(tmp) / f"new_{march}.so")]
            keep: list = []
            calls = {(s, i): make_call(lib, *s, keep) for s in shapes for i, lib in enumerate(libs)}
            overhead = [per_call_us(empty_call(libs[0]), 2000, clock) for _ in range(3)]
            times: dict = {key: [] for key in calls}
            for _ in range(args.reps):
                for key, fn in calls.items():
                    iters = int(min(5000, max(3, 3e7 / (key[0][1] * key[0][2] * key[0][3]))))
                    times[key].append(per_call_us(fn, iters, clock) - min(overhead))
            print(f"{march}, {args.threads} thread(s) (ctypes call: {min(overhead):.2f} us, subtracted)")
            for shape in shapes:
                base, new = times[(shape, 0)], times[(shape, 1)]
                name = f"{shape[1]}x{shape[2]}x{shape[3]}" + (" prepacked" if shape[0] else "")
                b, n = statistics.median(base), statistics.median(new)
                print(f"  {name:24s} {args.base}: {b:8.3f} us ({min(base):.3f}-{max(base):.3f})   "
                      f"this tree: {n:8.3f} us ({min(new):.3f}-{max(new):.3f})   {b / n:.2f}x")


if __name__ == "__main__":
    main()
