"""The README model's first compile on a fresh machine: `compile_and_package` alone, in a new
process with an empty build cache each time, with the kernels `pip install` built (the
package's prebuilt/ folder) and without them (the folder looked up replaced by an empty one:
the first compile builds the GEMM itself, as after `pip install` with AOTC_PREBUILT=0).

    python benchmarks/first_compile.py --reps 5

Prints each mode's median and range of wall seconds, in turn, so drift shows in both.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ONE = r"""
import os, sys, time
import torch
sys.path.insert(0, {examples!r})
from model import Model
import aotc
from aotc.cxx import prebuilt
if {without!r}:
    prebuilt.PREBUILT_DIR = prebuilt.PREBUILT_DIR.parent / "no-prebuilt-here"
torch.manual_seed(0)
with torch.no_grad():
    batch = torch.export.Dim("batch", min=1, max=1024)
    ep = torch.export.export(Model(), (torch.randn(8, 10),), dynamic_shapes={{"x": {{0: batch}}}})
start = time.perf_counter()
aotc.compile_and_package(ep, package_path=os.path.join({cache!r}, "m.pt2"))
print(time.perf_counter() - start)
"""


def once(without: bool) -> float:
    examples = str(Path(__file__).resolve().parent.parent / "examples")
    with tempfile.TemporaryDirectory() as cache:
        code = ONE.format(examples=examples, without=without, cache=cache)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={"AOTC_CACHE_DIR": cache, "PATH": "/usr/bin:/bin"}, check=True)
        return float(out.stdout.split()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    times: dict[str, list[float]] = {"installed kernels": [], "kernels built on first use": []}
    for _ in range(args.reps):
        for mode in times:
            times[mode].append(once(mode != "installed kernels"))
    for mode, ts in times.items():
        print(f"{mode}: median {statistics.median(ts):.2f} s (min {min(ts):.2f}, max "
              f"{max(ts):.2f}) over {len(ts)} fresh processes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
