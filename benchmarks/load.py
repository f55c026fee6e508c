"""Package load time, Python and C++ runtimes, on a small and a ~100 MB package.

    python benchmarks/load.py                 # build both packages, time, print a table
    python benchmarks/load.py --reps 50 --skip-cpp

The packages (the README model, and a GELU MLP of four 2560x2560 layers: 26M float32
parameters, 105 MB) are compiled into build/bench-load/ with a private, fresh compiler cache,
so their compile times are cold. Every load is "cold-ish": a new loader each repetition,
the package file already in the page cache. The Python loader is timed in this process (its
model.so stays loaded after the first repetition, so later ones skip the dynamic linker's
work) and in fresh processes (numpy and aotc.runtime imported first, not timed), with its
stages taken from `CompiledModel.load_seconds`; the C++ loader by benchmarks/cpp/load_time
(built with CMake). CPU time (all threads) is printed beside wall time: on a busy machine
it is the steadier figure. The hashes' own throughput on weights.bin is measured beside.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUILD = ROOT / "build" / "bench-load"
os.environ["AOTC_CACHE_DIR"] = str(BUILD / "cache")

import torch  # noqa: E402

import aotc  # noqa: E402

sys.path.insert(0, str(HERE))
import models  # noqa: E402

FRESH = r"""
import sys, time, json
import numpy as np
import aotc.runtime as rt
t, c = time.perf_counter(), time.process_time()
m = rt.load_package(sys.argv[1])
total, cpu = time.perf_counter() - t, time.process_time() - c
print(json.dumps({"total": total, "cpu": cpu, **getattr(m, "load_seconds", {})}))
"""


def build(name: str, module: torch.nn.Module, example: torch.Tensor) -> tuple[Path, float]:
    path = BUILD / f"{name}.pt2"
    batch = torch.export.Dim("batch", min=1, max=1024)
    with torch.no_grad():
        ep = torch.export.export(module.eval(), (example,), dynamic_shapes=({0: batch},))
    start = time.perf_counter()
    aotc.compile_and_package(ep, package_path=path)
    return path, time.perf_counter() - start


def time_python(path: Path, reps: int) -> tuple[list[float], dict[str, float]]:
    import aotc.runtime as rt

    rt.load_package(path)  # page cache, model.so materialized
    totals, stages = [], {}
    for _ in range(reps):
        start, cpu = time.perf_counter(), time.process_time()
        model = rt.load_package(path)
        totals.append(time.perf_counter() - start)
        stages.setdefault("cpu", []).append(time.process_time() - cpu)
        for stage, t in getattr(model, "load_seconds", {}).items():
            stages.setdefault(stage, []).append(t)
        del model
    return totals, {k: statistics.median(v) for k, v in stages.items()}


def time_fresh(path: Path, reps: int) -> tuple[list[float], dict[str, float]]:
    import json

    env = dict(os.environ, PYTHONPATH=str(Path(aotc.__file__).resolve().parents[1]))
    totals, stages = [], {}
    for _ in range(reps):
        out = subprocess.run([sys.executable, "-c", FRESH, str(path)], capture_output=True,
                             text=True, env=env, timeout=120, check=True).stdout
        row = json.loads(out.strip().splitlines()[-1])
        totals.append(row.pop("total"))
        for stage, t in row.items():
            stages.setdefault(stage, []).append(t)
    return totals, {k: statistics.median(v) for k, v in stages.items()}


def time_cpp(path: Path, reps: int) -> str:
    out = BUILD / "cpp"
    if shutil.which("cmake") is None:
        return "cmake not installed"
    if not (out / "CMakeCache.txt").exists():
        subprocess.run(["cmake", "-S", str(HERE / "cpp"), "-B", str(out),
                        f"-DCMAKE_PREFIX_PATH={aotc.cmake_prefix_path}",
                        "-DCMAKE_BUILD_TYPE=Release"], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(out), "-j", "2"], check=True, capture_output=True)
    proc = subprocess.run([str(out / "load_time"), str(path), str(reps)], capture_output=True,
                          text=True, timeout=600)
    return (proc.stdout + proc.stderr).strip()


def hash_rates(path: Path) -> dict[str, float]:
    """Seconds to hash the package's weights.bin with each digest, in memory."""
    import hashlib
    import zipfile

    with zipfile.ZipFile(path) as zf:
        data = zf.read("aotc/model/weights.bin")
    out = {}
    for name, fn in (("sha256", lambda: hashlib.sha256(data).digest()),
                     ("crc32", lambda: zlib.crc32(data))):
        out[name] = min(_timed(fn) for _ in range(5))
    out["MB"] = len(data) / 1e6
    return out


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def ms(t: float) -> str:
    return f"{t * 1e3:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--fresh-reps", type=int, default=5)
    parser.add_argument("--skip-cpp", action="store_true")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    shutil.rmtree(BUILD / "cache", ignore_errors=True)
    BUILD.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    packages = {
        "small (README model)": build("small", models.ReadmeModel(), torch.randn(8, 10)),
        "100 MB (MLP 4x2560^2)": build("large", models.GeluMLP((2560,) * 5),
                                       torch.randn(8, 2560)),
    }
    for label, (path, compile_s) in packages.items():
        size = path.stat().st_size / 1e6
        totals, stages = time_python(path, args.reps)
        fresh, fresh_stages = time_fresh(path, args.fresh_reps)
        print(f"## {label}: {path.name}, {size:.1f} MB, compiled in {compile_s:.2f} s (cold cache)")
        print(f"python, in process: median {ms(statistics.median(totals))} ms, "
              f"min {ms(min(totals))} ms over {args.reps} loads "
              f"(CPU time median {ms(stages.pop('cpu'))} ms)")
        print(f"python, fresh process: median {ms(statistics.median(fresh))} ms, "
              f"min {ms(min(fresh))} ms over {args.fresh_reps} processes "
              f"(CPU time median {ms(fresh_stages.pop('cpu', 0))} ms)")
        if stages:
            print("  stages (ms, in process | fresh): " + ", ".join(
                f"{k} {ms(v)} | {ms(fresh_stages.get(k, 0))}" for k, v in stages.items()))
        rates = hash_rates(path)
        print(f"  weights.bin {rates['MB']:.1f} MB: sha256 {ms(rates['sha256'])} ms, "
              f"crc32 {ms(rates['crc32'])} ms (in memory)")
        if not args.skip_cpp:
            print("c++: " + time_cpp(path, args.reps))
        print()


if __name__ == "__main__":
    main()
