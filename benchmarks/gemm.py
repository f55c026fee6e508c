"""GEMM against the machine's fp32 FMA peak, per ISA build, measured in one run.

    python benchmarks/gemm.py                       # prints, and writes benchmarks/GEMM.md
    python benchmarks/gemm.py --threads 1 --out /tmp/g.md --quick

For each -march level this CPU runs (x86-64-v4: AVX-512, x86-64-v3: AVX2+FMA), the script
builds the shipped GEMM (src/aotc/kernels/gemm.cpp) and a register-only FMA loop
(benchmarks/cpp/fma_peak.cpp) into one library, measures the loop's GFLOP/s (that build's
peak) and then the GEMM on square and inference shapes, as a percentage of that peak, at
each thread count. Inference shapes multiply activations by a transposed [N, K] weight (as
nn.Linear does), prepacked once when the kernel offers prepacking, as a compiled model does.
The GEMV 1x4096x4096 is also timed against torch.mm on the same data, calls alternating.
Each figure is the median of repeated timings; the machine's load average is recorded
beside the results. At 1 thread, the GEMM and the peak loop are timed in the calling thread's
CPU time (the time it was descheduled by other work on a shared machine does not count);
a team of threads is timed by the wall clock (`--clock wall` times 1 thread so too).
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
KERNELS = ROOT / "src" / "aotc" / "kernels"
PEAK_SRC = HERE / "cpp" / "fma_peak.cpp"
OUT = HERE / "GEMM.md"

MARCH_FEATURES = {
    "x86-64-v4": {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx2", "fma"},
    "x86-64-v3": {"avx2", "fma", "bmi2"},
}
# (name, M, N, K, B is a transposed weight)
SQUARE = [("1024^3", 1024, 1024, 1024, False), ("2048^3", 2048, 2048, 2048, False)]
INFERENCE = [("64x4096x4096", 64, 4096, 4096, True), ("128x768x3072", 128, 768, 3072, True)]
GEMV = ("1x4096x4096", 1, 4096, 4096, True)

i64, ptr, f32 = ctypes.c_int64, ctypes.c_void_p, ctypes.c_float


def cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def build(march: str, out_dir: Path) -> ctypes.CDLL:
    lib_path = out_dir / f"libgemm_bench_{march}.so"
    cmd = ["g++", f"-march={march}", "-O3", "-fopenmp", "-fPIC", "-shared", "-std=c++17",
           "-I", str(KERNELS), str(KERNELS / "gemm.cpp"), str(PEAK_SRC), "-o", str(lib_path)]
    subprocess.run(cmd, check=True)
    lib = ctypes.CDLL(str(lib_path))
    lib.aotc_sgemm_batched.restype = None
    lib.aotc_sgemm_batched.argtypes = [i64] * 4 + [ptr, i64, i64, i64] * 2 + [ptr, i64, i64] + \
        [ptr, i64, i64, i64, f32, f32]
    lib.bench_fma_run.restype = f32
    lib.bench_fma_run.argtypes = [i64, ctypes.c_int]
    lib.bench_fma_lanes.restype = i64
    lib.bench_fma_chains.restype = i64
    if hasattr(lib, "aotc_sgemm_pack_b"):
        lib.aotc_sgemm_packed_floats.restype = i64
        lib.aotc_sgemm_packed_floats.argtypes = [i64, i64]
        lib.aotc_sgemm_pack_b.restype = None
        lib.aotc_sgemm_pack_b.argtypes = [i64, i64, ptr, i64, i64, ptr]
        lib.aotc_sgemm_prepacked.restype = None
        lib.aotc_sgemm_prepacked.argtypes = [i64] * 4 + [ptr, i64, i64, i64, ptr, ptr, i64, i64] + \
            [ptr, i64, i64, i64, f32, f32, ptr]
    return lib


def clock_for(threads: int, wall: bool):
    """The clock that times a call at this many threads: the calling thread's CPU time
    when it does all the work (unless `wall`), else the wall clock."""
    return time.thread_time if threads == 1 and not wall else time.perf_counter


def timed(fn, min_reps: int, min_seconds: float, clock=time.perf_counter) -> float:
    """Median seconds of one call, after a warm-up call."""
    fn()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < min_seconds:
        t0 = clock()
        fn()
        times.append(clock() - t0)
        if len(times) >= 200:
            break
    return statistics.median(times)


class Peak:
    """The register-only FMA loop of one build, sized to run about 20 ms a call."""

    def __init__(self, lib, threads: int, wall: bool):
        self.lib, self.threads = lib, threads
        self.clock = clock_for(threads, wall)
        self.per_step = 2.0 * lib.bench_fma_lanes() * lib.bench_fma_chains() * threads
        self.iters = 100_000
        while True:  # grow until one call takes 20 ms
            t = timed(lambda: lib.bench_fma_run(self.iters, threads), 1, 0.0, self.clock)
            if t > 0.02:
                break
            self.iters *= 2

    def gflops(self) -> float:
        t0 = self.clock()
        self.lib.bench_fma_run(self.iters, self.threads)
        return self.per_step * self.iters / (self.clock() - t0) / 1e9


class Case:
    """Operands of C[M, N] = A[M, K] @ B, B row-major [K, N] or a transposed [N, K] weight."""

    def __init__(self, lib, m: int, n: int, k: int, weight: bool, prepack: bool):
        rng = np.random.default_rng(0)
        self.lib, self.m, self.n, self.k = lib, m, n, k
        self.a = rng.standard_normal((m, k), dtype=np.float32)
        self.b = rng.standard_normal((n, k) if weight else (k, n), dtype=np.float32)
        self.c = np.empty((m, n), np.float32)
        self.sb = (1, k) if weight else (n, 1)
        self.packed = None
        if prepack and hasattr(lib, "aotc_sgemm_pack_b"):
            size = lib.aotc_sgemm_packed_floats(k, n)
            raw = np.empty(size + 16, np.float32)  # the packed layout is 64-byte aligned
            start = (-raw.ctypes.data) % 64 // 4
            self.packed = raw[start:start + size]
            lib.aotc_sgemm_pack_b(k, n, self.b.ctypes.data, *self.sb, self.packed.ctypes.data)

    def __call__(self) -> None:
        m, n, k = self.m, self.n, self.k
        if self.packed is not None:
            self.lib.aotc_sgemm_prepacked(1, m, n, k, self.a.ctypes.data, 0, k, 1,
                                          self.packed.ctypes.data, self.c.ctypes.data, 0, n,
                                          None, 0, 0, 0, 1.0, 0.0, None)
        else:
            self.lib.aotc_sgemm_batched(1, m, n, k, self.a.ctypes.data, 0, k, 1,
                                        self.b.ctypes.data, 0, *self.sb, self.c.ctypes.data, 0,
                                        n, None, 0, 0, 0, 1.0, 0.0)

    def check(self) -> None:
        ref = self.a.astype(np.float64) @ (self.b.T if self.sb[0] == 1 else self.b).astype(np.float64)
        np.testing.assert_allclose(self.c, ref, rtol=1e-3, atol=1e-3 * np.sqrt(self.k))


def set_threads(n: int) -> None:
    ctypes.CDLL("libgomp.so.1").omp_set_num_threads(n)


def interleaved(peak: Peak, fn, flops: float, seconds: float) -> tuple[float, float, float]:
    """(median seconds of fn, median peak GFLOP/s, median of the per-round % of peak): each
    round times the peak loop and then fn, so a change in machine load hits both alike."""
    fn()
    secs, peaks, pcts = [], [], []
    start = time.perf_counter()
    while len(secs) < 5 or time.perf_counter() - start < seconds:
        p = peak.gflops()
        reps = max(1, int(0.01 / max(secs[-1], 1e-6))) if secs else 1  # ~10 ms of fn
        t0 = peak.clock()
        for _ in range(reps):
            fn()
        t = (peak.clock() - t0) / reps
        secs.append(t)
        peaks.append(p)
        pcts.append(100.0 * flops / t / 1e9 / p)
        if len(secs) >= 100:
            break
    return statistics.median(secs), statistics.median(peaks), statistics.median(pcts)


def measure(march: str, lib, threads: int, quick: bool, wall: bool) -> list[tuple]:
    """Rows (march, threads, shape, ms, GFLOP/s, peak GFLOP/s, % of peak, note)."""
    set_threads(threads)
    peak = Peak(lib, threads, wall)
    rows = []
    secs = 0.3 if quick else 2.0
    for name, m, n, k, weight in SQUARE + INFERENCE + [GEMV]:
        case = Case(lib, m, n, k, weight, prepack=weight)
        case()
        case.check()
        flops = 2.0 * m * n * k
        t, p, pct = interleaved(peak, case, flops, secs)
        note = "prepacked weight" if case.packed is not None else (
            "transposed weight" if weight else "row-major B")
        rows.append((march, threads, name, t * 1e3, flops / t / 1e9, p, pct, note))
    return rows


def gemv_against_torch(lib, threads: int, quick: bool) -> tuple[float, float]:
    """(aotc seconds, torch.mm seconds) of the GEMV on the same data, median of calls that
    alternate between the two, so that both see the same machine load."""
    import torch
    torch.set_num_threads(threads)
    set_threads(threads)
    _, m, n, k, weight = GEMV
    case = Case(lib, m, n, k, weight, prepack=True)
    x, wt = torch.from_numpy(case.a), torch.from_numpy(case.b).t()
    ours, theirs = [], []
    case()
    torch.mm(x, wt)
    start = time.perf_counter()
    while len(ours) < 20 or time.perf_counter() - start < (0.3 if quick else 2.0):
        t0 = time.perf_counter()
        case()
        t1 = time.perf_counter()
        torch.mm(x, wt)
        t2 = time.perf_counter()
        ours.append(t1 - t0)
        theirs.append(t2 - t1)
        if len(ours) >= 2000:
            break
    return statistics.median(ours), statistics.median(theirs)


# the bars at 1 thread, per build against its own peak: % of peak at least this
PEAK_BARS = {"1024^3": 85.0, "2048^3": 85.0, "64x4096x4096": 80.0, "128x768x3072": 80.0}


def tables(rows: list, gemv: dict, wall: bool) -> list[str]:
    """The markdown tables of a run: rows of measure(), gemv {(march, threads): (aotc s,
    torch s)}."""
    lines = ["Each shape's timings alternate with the FMA loop's; '% of peak' is the median over",
             "those rounds of GEMM GFLOP/s over the peak measured just before it.",
             "1-thread rows: ms and GFLOP/s of the calling thread's CPU time, peak likewise"
             if not wall else "Every row: wall-clock time.",
             "(rows of 2 or more threads: wall clock).", "",
             "| build | threads | shape (MxNxK) | ms | GFLOP/s | peak GFLOP/s | % of peak | B |",
             "|---|--:|---|--:|--:|--:|--:|---|"]
    for march, t, name, ms, gf, peak, pct, note in rows:
        lines.append(f"| {march} | {t} | {name} | {ms:.3f} | {gf:.1f} | {peak:.1f} | "
                     f"{pct:.1f} | {note} |")
    lines += ["", "GEMV against torch.mm on the same data, calls alternating (prepacked weight "
              "for aotc, the same [N, K] weight transposed for torch):", "",
              "| build | threads | aotc ms | torch.mm ms | aotc / torch |",
              "|---|--:|--:|--:|--:|"]
    for (march, t), (ours, theirs) in gemv.items():
        lines.append(f"| {march} | {t} | {ours * 1e3:.3f} | {theirs * 1e3:.3f} | "
                     f"{ours / theirs:.2f} |")
    return lines


def acceptance(rows: list, gemv: dict) -> list[str]:
    """One line per build: the 1-thread bars (PEAK_BARS, and the GEMV no slower than
    torch.mm), met or not."""
    lines = []
    for march in dict.fromkeys(r[0] for r in rows):
        parts = []
        for march_, t, name, _, _, _, pct, _ in rows:
            if march_ == march and t == 1 and name in PEAK_BARS:
                bar = PEAK_BARS[name]
                parts.append(f"{name} {pct:.1f}% ≥ {bar:.0f}%: {'met' if pct >= bar else 'NOT met'}")
        if (march, 1) in gemv:
            ours, theirs = gemv[(march, 1)]
            parts.append(f"GEMV {ours * 1e3:.3f} ms vs torch.mm {theirs * 1e3:.3f} ms: "
                         f"{'met' if ours <= theirs else 'NOT met'}")
        lines.append(f"- GEMM, {march}, 1 thread: " + "; ".join(parts) + ".")
    return lines


def write_section(out: Path, text: str) -> None:
    head = "# GEMM against the FMA peak\n\nWritten by `python benchmarks/gemm.py`; newest run first.\n"
    old = out.read_text() if out.exists() else head
    body = old[len(head):] if old.startswith(head) else "\n" + old
    out.write_text(head + "\n" + text + body)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--march", default="x86-64-v4,x86-64-v3")
    ap.add_argument("--quick", action="store_true", help="shorter timings")
    ap.add_argument("--out", type=Path, default=OUT, help="markdown file to prepend a section to")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures as JSON")
    ap.add_argument("--clock", choices=["cpu", "wall"], default="cpu",
                    help="cpu: 1-thread rows in the calling thread's CPU time (default); "
                    "wall: every row by the wall clock")
    args = ap.parse_args(argv)
    wall = args.clock == "wall"
    threads = [int(t) for t in args.threads.split(",")]
    flags = cpu_flags()
    load_before = os.getloadavg()[0]
    rows: list[tuple] = []
    gemv: dict[tuple[str, int], tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for march in args.march.split(","):
            missing = MARCH_FEATURES[march] - flags
            if missing:
                print(f"skipping {march}: this CPU lacks {' '.join(sorted(missing))}")
                continue
            lib = build(march, Path(tmp))
            for t in threads:
                for row in measure(march, lib, t, args.quick, wall):
                    rows.append(row)
                    print(f"{row[0]:10} {row[1]}t {row[2]:14} {row[3]:9.3f} ms {row[4]:7.1f} "
                          f"GFLOP/s  peak {row[5]:6.1f}  {row[6]:5.1f}%  {row[7]}", flush=True)
                ours, theirs = gemv[(march, t)] = gemv_against_torch(lib, t, args.quick)
                print(f"{march:10} {t}t GEMV {GEMV[0]}: aotc {ours * 1e3:.3f} ms, torch.mm "
                      f"{theirs * 1e3:.3f} ms (alternating)", flush=True)
    load_after = os.getloadavg()[0]

    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "gemv": [[m, t, o, th] for (m, t), (o, th)
                                                                 in gemv.items()],
                                         "load": [load_before, load_after], "wall": wall}))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    cmd = "python benchmarks/gemm.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = [f"## {now} (revision {rev})", "",
             f"- command: `{cmd.strip()}`",
             f"- machine: {os.cpu_count()} logical cores, {cpu_name()}; Linux {platform.release()}",
             f"- load average (1 min) before / after: {load_before:.2f} / {load_after:.2f} "
             "(other work on the machine lowers every figure, the peak included)", ""]
    lines += tables(rows, gemv, wall) + [""] + acceptance(rows, gemv)
    text = "\n".join(lines) + "\n"
    if not args.no_write:
        write_section(args.out, text)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
