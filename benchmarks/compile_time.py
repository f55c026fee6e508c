"""Cold compile time of the benchmark models, and of transformers that repeat one block.

    python benchmarks/compile_time.py              # the suite + stacks of 2, 6 and 12 blocks
    python benchmarks/compile_time.py --models readme_b8,encoder_s128 --blocks 24

Compiles go to a private cache under build/bench-compile/ whose shipped kernels are built
first (not timed, as after `aotc prepare`); the model builds are removed before each compile,
so every figure is a cold compile of the model itself. Prints per model the wall time, the
CPU time (this process and the compiler it runs: the steadier figure on a busy machine),
the stages (metadata's stage_seconds), and the kernels of the generated C++: functions
written, and kernel calls that share one of them.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import sys
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD = HERE.parent / "build" / "bench-compile"
os.environ["AOTC_CACHE_DIR"] = str(BUILD / "cache")

import torch  # noqa: E402

import aotc  # noqa: E402
from aotc.cli import main as cli  # noqa: E402

sys.path.insert(0, str(HERE))
import models  # noqa: E402


class Stack(torch.nn.Module):
    """`n` encoder blocks of one shape: the kernels of every block are the same code."""

    def __init__(self, n: int):
        super().__init__()
        self.blocks = torch.nn.ModuleList(models.EncoderBlock() for _ in range(n))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def _children_cpu() -> float:
    """CPU seconds of finished child processes (the C++ compiler)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def compile_once(name: str, model: torch.nn.Module, inputs: tuple, dynamic_shapes=None) -> dict:
    shutil.rmtree(BUILD / "cache" / "models", ignore_errors=True)
    shutil.rmtree(BUILD / "cache" / "libraries", ignore_errors=True)
    with torch.no_grad():
        ep = torch.export.export(model.eval(), inputs, dynamic_shapes=dynamic_shapes)
    path = BUILD / f"{name}.pt2"
    start, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
    aotc.compile_and_package(ep, package_path=path)
    total = time.perf_counter() - start
    cpu = time.process_time() - cpu + _children_cpu() - children
    with zipfile.ZipFile(path) as zf:
        meta = json.loads(zf.read("aotc/model/metadata.json"))
        source = zf.read("aotc/model/model.cpp").decode()
    written = len(re.findall(r"^static void k\d+_", source, re.M))
    shared = len(re.findall(r"^// k\d+_\w+: the code of ", source, re.M))
    return {"total": total, "cpu": cpu, "stages": meta.get("stage_seconds", {}), "written": written,
            "shared": shared, "lines": source.count("\n")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated benchmark names (default: the suite)")
    parser.add_argument("--blocks", default="2,6,12", help="stack sizes of encoder blocks")
    args = parser.parse_args()
    BUILD.mkdir(parents=True, exist_ok=True)
    cli(["prepare"])
    cases = [(b.name, *b.build()) for b in models.select(args.models)]
    for n in [int(v) for v in args.blocks.split(",") if v]:
        torch.manual_seed(0)
        cases.append((f"stack{n}_s128", Stack(n), (torch.randn(1, 128, 256),)))
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print("| model | compile s | CPU s | codegen s | build s | kernels written | calls sharing "
          "one | C++ lines |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for name, model, inputs in cases:
        r = compile_once(name, model, inputs)
        print(f"| {name} | {r['total']:.2f} | {r['cpu']:.2f} | {r['stages'].get('codegen', 0):.3f} | "
              f"{r['stages'].get('build', 0):.2f} | {r['written']} | {r['shared']} | "
              f"{r['lines']} |", flush=True)


if __name__ == "__main__":
    main()
