"""precision="bf16" against the float32 path: kernel speed and model accuracy, one run.

    python benchmarks/gemm_bf16.py                     # kernels and models, prints markdown
    python benchmarks/gemm_bf16.py --skip-models --seconds 1

Kernels: the shipped GEMM (gemm.cpp, prepacked float32 weight) and the bfloat16 GEMM
(gemm_bf16.cpp, prepacked bfloat16 weight) built for x86-64-v4 into one library with the
FMA peak loop (benchmarks/cpp/fma_peak.cpp); at 1 thread, rounds alternate the peak loop, the
float32 call and the bfloat16 call, each timed in the calling thread's CPU time; medians.
Percentages are of the float32 FMA peak (vdpbf16ps does two multiply-adds per lane, so the
bfloat16 kernel's nominal peak is twice that). Error: max |C - C64| / max |C64| against a
float64 product of the unrounded operands.

Models (benchmarks/models.py): each compiled with precision "fp32" and "bf16" (1 thread),
the outputs compared with eager float32 (max abs error, and that over max |eager|), and the
two packages' calls alternated and timed in thread CPU time. Needs avx512_bf16.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gemm import KERNELS, PEAK_SRC, Peak, f32, i64, ptr, set_threads  # noqa: E402

SHAPES = [("1024^3", 1024, 1024, 1024), ("64x4096x4096", 64, 4096, 4096),
          ("128x768x3072", 128, 768, 3072), ("1x4096x4096", 1, 4096, 4096)]
MODELS = "mlp4096_b64,bert_layer_s128,llama_block_s256"


def build(out_dir: Path) -> ctypes.CDLL:
    lib_path = out_dir / "libgemm_bf16_bench.so"
    subprocess.run(["g++", "-march=x86-64-v4", "-O3", "-fopenmp", "-fPIC", "-shared",
                    "-std=c++17", "-I", str(KERNELS), str(KERNELS / "gemm.cpp"),
                    str(KERNELS / "gemm_bf16.cpp"), str(PEAK_SRC), "-o", str(lib_path)],
                   check=True)
    lib = ctypes.CDLL(str(lib_path))
    lib.bench_fma_run.restype = f32
    lib.bench_fma_run.argtypes = [i64, ctypes.c_int]
    lib.bench_fma_lanes.restype = i64
    lib.bench_fma_chains.restype = i64
    lib.aotc_sgemm_packed_floats.restype = i64
    lib.aotc_sgemm_packed_floats.argtypes = [i64, i64]
    lib.aotc_sgemm_packed_bf16_elems.restype = i64
    lib.aotc_sgemm_packed_bf16_elems.argtypes = [i64, i64]
    for name in ("aotc_sgemm_pack_b", "aotc_sgemm_pack_b_bf16"):
        getattr(lib, name).restype = None
        getattr(lib, name).argtypes = [i64, i64, ptr, i64, i64, ptr]
    for name in ("aotc_sgemm_prepacked", "aotc_sgemm_prepacked_bf16"):
        getattr(lib, name).restype = None
        getattr(lib, name).argtypes = [i64] * 4 + [ptr, i64, i64, i64, ptr, ptr, i64, i64] + \
            [ptr, i64, i64, i64, f32, f32, ptr]
    return lib


def aligned(n: int, dtype) -> np.ndarray:
    raw = np.zeros(n + 64, dtype)
    start = (-raw.ctypes.data) % 64 // raw.itemsize
    return raw[start:start + n]


def kernels(seconds: float) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        lib = build(Path(tmp))
        set_threads(1)
        peak = Peak(lib, 1, wall=False)
        rows = []
        for name, m, n, k in SHAPES:
            rng = np.random.default_rng(0)
            a = rng.standard_normal((m, k), dtype=np.float32)
            w = rng.standard_normal((n, k), dtype=np.float32)  # a transposed weight, as Linear
            p32 = aligned(lib.aotc_sgemm_packed_floats(k, n), np.float32)
            p16 = aligned(lib.aotc_sgemm_packed_bf16_elems(k, n), np.uint16)
            lib.aotc_sgemm_pack_b(k, n, w.ctypes.data, 1, k, p32.ctypes.data)
            lib.aotc_sgemm_pack_b_bf16(k, n, w.ctypes.data, 1, k, p16.ctypes.data)
            c32, c16 = np.empty((m, n), np.float32), np.empty((m, n), np.float32)

            def call(fn, packed, c, m=m, n=n, k=k, a=a):
                return lambda: fn(1, m, n, k, a.ctypes.data, 0, k, 1, packed.ctypes.data,
                                  c.ctypes.data, 0, n, None, 0, 0, 0, 1.0, 0.0, None)
            f32_call = call(lib.aotc_sgemm_prepacked, p32, c32)
            bf_call = call(lib.aotc_sgemm_prepacked_bf16, p16, c16)
            f32_call(), bf_call()
            ref = a.astype(np.float64) @ w.T.astype(np.float64)
            scale = np.abs(ref).max()
            err32, err16 = (np.abs(c - ref).max() / scale for c in (c32, c16))
            flops = 2.0 * m * n * k
            t32, t16, peaks = [], [], []
            start = time.perf_counter()
            while len(t32) < 5 or time.perf_counter() - start < seconds:
                peaks.append(peak.gflops())
                for fn, out in ((f32_call, t32), (bf_call, t16)):
                    t0 = time.thread_time()
                    fn()
                    out.append(time.thread_time() - t0)
                if len(t32) >= 200:
                    break
            s32, s16, pk = statistics.median(t32), statistics.median(t16), statistics.median(peaks)
            rows.append(f"| {name} | {s32 * 1e3:.3f} | {100 * flops / s32 / 1e9 / pk:.0f}% | "
                        f"{s16 * 1e3:.3f} | {100 * flops / s16 / 1e9 / pk:.0f}% | "
                        f"{s32 / s16:.2f}x | {err32:.1e} | {err16:.1e} |")
        return [f"fp32 FMA peak (1 thread, median): {pk:.1f} GFLOP/s", "",
                "| shape (prepacked transposed weight) | fp32 ms | fp32 % peak | bf16 ms | "
                "bf16 % of fp32 peak | speedup | fp32 rel err | bf16 rel err |",
                "|---|---|---|---|---|---|---|---|"] + rows


def models(names: str, seconds: float) -> list[str]:
    import torch

    import aotc
    from models import select

    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for bench in select(names):
            module, inputs = bench.build()
            with torch.no_grad():
                ep = torch.export.export(module, inputs)
                ref = ep.module()(*inputs)
            compiled = {}
            for precision in ("fp32", "bf16"):
                path = aotc.compile_and_package(ep, Path(tmp) / f"{bench.name}-{precision}.pt2",
                                                options={"precision": precision, "num_threads": 1})
                compiled[precision] = aotc.load_package(path)
            errs = {}
            for precision, model in compiled.items():
                out = model(*inputs)
                diff = (out - ref).abs().max().item()
                errs[precision] = (diff, diff / ref.abs().max().item())
            times: dict[str, list[float]] = {"fp32": [], "bf16": []}
            start = time.perf_counter()
            while len(times["fp32"]) < 5 or time.perf_counter() - start < seconds:
                for precision, model in compiled.items():
                    t0 = time.thread_time()
                    model(*inputs)
                    times[precision].append(time.thread_time() - t0)
            m32, m16 = (statistics.median(times[p]) * 1e3 for p in ("fp32", "bf16"))
            rows.append(f"| {bench.name} | {m32:.2f} | {m16:.2f} | {m32 / m16:.2f}x | "
                        f"{errs['fp32'][0]:.1e} / {errs['fp32'][1]:.1e} | "
                        f"{errs['bf16'][0]:.1e} / {errs['bf16'][1]:.1e} |")
    return ["| model | fp32 ms | bf16 ms | speedup | fp32 max abs / rel err | "
            "bf16 max abs / rel err |", "|---|---|---|---|---|---|"] + rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="timing per shape or model")
    ap.add_argument("--models", default=MODELS, help="benchmarks/models.py names")
    ap.add_argument("--skip-models", action="store_true")
    ap.add_argument("--skip-kernels", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not args.skip_kernels:
        print("\n".join(kernels(args.seconds)))
    if not args.skip_models:
        print()
        print("\n".join(models(args.models, args.seconds)))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
