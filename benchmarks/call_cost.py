"""The cost of one call of the README model (batch 8, 1 thread), exported with a static batch
and with a dynamic one, from Python (torch tensors and numpy arrays) and from C++
(benchmarks/cpp/load_time's steady call, built with CMake).

    python benchmarks/call_cost.py [--reps 15] [--calls 20000]

Each Python figure is the median (and minimum) over `reps` batches of `calls` calls after a
warm-up; the first call of a dynamic shape takes the general path and teaches the short path
that shape, so the timed calls are the short path's. The C++ figure is load_time's steady
call, run `reps` times in fresh processes: median and minimum.
"""
from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples"))
from model import Model  # noqa: E402

import aotc  # noqa: E402


def packages(folder: Path) -> dict[str, str]:
    torch.manual_seed(0)
    x = torch.randn(8, 10)
    batch = torch.export.Dim("batch", min=1, max=1024)
    with torch.no_grad():
        eps = {"static": torch.export.export(Model().eval(), (x,)),
               "dynamic": torch.export.export(Model().eval(), (x,),
                                              dynamic_shapes={"x": {0: batch}})}
    return {k: str(aotc.compile_and_package(ep, folder / f"{k}.pt2")) for k, ep in eps.items()}


def python_call_us(path: str, arg, reps: int, calls: int) -> tuple[float, float]:
    model = aotc.load_package(path, num_threads=1)
    for _ in range(2000):
        model(arg)
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            model(arg)
        samples.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(samples), min(samples)


def cpp_call_us(folder: Path, path: str, reps: int) -> tuple[float, float] | None:
    if shutil.which("cmake") is None:
        return None
    build = folder / "cpp"
    if not (build / "load_time").exists():
        subprocess.run(["cmake", "-S", str(HERE / "cpp"), "-B", str(build),
                        f"-DCMAKE_PREFIX_PATH={aotc.cmake_prefix_path}",
                        "-DCMAKE_BUILD_TYPE=Release"], check=True, capture_output=True)
        subprocess.run(["cmake", "--build", str(build), "-j", "2"], check=True,
                       capture_output=True)
    samples = []
    for _ in range(reps):
        out = subprocess.run([str(build / "load_time"), path, "3", "8"], check=True,
                             capture_output=True, text=True,
                             env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}).stdout
        samples.append(float(re.search(r"steady call ([0-9.]+) us", out).group(1)))
    return statistics.median(samples), min(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = packages(folder)
        x = torch.randn(8, 10)
        print("| export | torch call µs (median, min) | numpy call µs | C++ call µs |")
        print("|---|--:|--:|--:|")
        for kind, path in paths.items():
            cells = [python_call_us(path, arg, args.reps, args.calls) for arg in (x, x.numpy())]
            cpp = cpp_call_us(folder, path, max(3, args.reps // 3))
            cells.append(cpp if cpp else (float("nan"), float("nan")))
            print(f"| {kind} | " + " | ".join(f"{m:.2f} ({lo:.2f})" for m, lo in cells) + " |",
                  flush=True)


if __name__ == "__main__":
    main()
