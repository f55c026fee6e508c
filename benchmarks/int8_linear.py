"""Quantized linears against float32: aotc packages of one MLP quantized by torchao, timed
against aotc's float32 package of the same MLP and against eager float32.

    python benchmarks/int8_linear.py                 # prints a markdown table
    python benchmarks/int8_linear.py --threads 1,2 --reps 11
    python benchmarks/int8_linear.py --threads 1 --batches 1,8   # decode sizes only

The MLP is Linear(1024, 4096) -> ReLU -> Linear(4096, 1024) with random weights, at
batches 1, 8 and 64. Configs: fp32; torchao Int8DynamicActivationInt8WeightConfig
(activations quantized per token at run time, aten._int_mm on kernels/gemm_int8.cpp with the
weight prepacked); Int8WeightOnlyConfig and IntxWeightOnlyConfig(int4, group 32) on
kernels/gemm_wo.cpp (the int8 weight read as stored, each group's zero point and scale
applied in registers; int4 values are held one per byte). Each thread count runs in its own
process (OMP_NUM_THREADS and torch.set_num_threads set before the first call); within it,
reps alternate the implementations in a rotating order, each rep one batch of about 40 ms of
back-to-back calls; cells are medians over reps of the per-call time. Needs the quant extra.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BATCHES = (1, 8, 64)
CONFIGS = ("fp32", "int8_dynamic", "int8_weight_only", "int4_weight_only")


def _quantized(model, name: str):
    import torch
    from torchao.quantization import (
        Int8DynamicActivationInt8WeightConfig,
        Int8WeightOnlyConfig,
        IntxWeightOnlyConfig,
        quantize_,
    )
    from torchao.quantization.granularity import PerGroup

    config = {"int8_dynamic": Int8DynamicActivationInt8WeightConfig(),
              "int8_weight_only": Int8WeightOnlyConfig(),
              "int4_weight_only": IntxWeightOnlyConfig(weight_dtype=torch.int4,
                                                       granularity=PerGroup(32))}[name]
    quantize_(model, config)
    return model


def worker(threads: int, reps: int, batches=BATCHES) -> dict:
    import torch

    import aotc

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                               torch.nn.Linear(4096, 1024)).eval()
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for batch in batches:
            x = torch.randn(batch, 1024)
            calls = {"eager fp32": lambda m=base, x=x: m(x)}
            for name in CONFIGS:
                module = base if name == "fp32" else _quantized(copy.deepcopy(base), name)
                with torch.no_grad():
                    ep = torch.export.export(module, (x,))
                path = aotc.compile_and_package(ep, Path(tmp) / f"{name}_{batch}.pt2")
                model = aotc.load_package(path, num_threads=threads)
                calls[f"aotc {name}"] = lambda m=model, x=x: m(x)
            out[batch] = _time(calls, reps)
    return out


def _time(calls: dict, reps: int) -> dict[str, float]:
    import torch

    names = list(calls)
    iters = {}
    for n in names:  # warm up, and size a rep to about 40 ms
        for _ in range(3):
            calls[n]()
        t = time.perf_counter()
        calls[n]()
        iters[n] = max(1, int(0.04 / max(time.perf_counter() - t, 1e-6)))
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(reps):
        for n in names[r % len(names):] + names[:r % len(names)]:
            with torch.inference_mode():
                t = time.perf_counter()
                for _ in range(iters[n]):
                    calls[n]()
                samples[n].append((time.perf_counter() - t) / iters[n])
    return {n: statistics.median(v) for n, v in samples.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)))
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    batches = tuple(int(b) for b in args.batches.split(","))
    if args.worker:
        print(json.dumps(worker(args.worker, args.reps, batches)))
        return
    print(f"- command: `python benchmarks/int8_linear.py --threads {args.threads} "
          f"--reps {args.reps} --batches {args.batches}`")
    print(f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average at "
          f"start {os.getloadavg()[0]:.2f}")
    print_tables(__file__, args.threads, ["--reps", str(args.reps), "--batches", args.batches],
                 "batch", "--:", ".3f")


def model_table_main(script: str, worker, default_reps: int) -> None:
    """The command line of a script timing models per thread count: `--worker T` runs
    worker(T, reps) and prints its JSON; otherwise the command, the date and the tables."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=default_reps)
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.reps)))
        return
    print(f"- command: `python benchmarks/{Path(script).name} --threads {args.threads} "
          f"--reps {args.reps}`")
    print(f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average at "
          f"start {os.getloadavg()[0]:.2f}")
    print_tables(script, args.threads, ["--reps", str(args.reps)], "model", "---", ".2f")


def print_tables(script: str, threads: str, worker_args: list[str], row: str, align: str,
                 cell: str) -> None:
    """Run `script --worker T` in its own process per thread count T (OMP_NUM_THREADS set
    before torch loads), and print its {row: {runtime: seconds}} as a markdown table of
    milliseconds with each cell's ratio to aotc fp32."""
    for t in (int(n) for n in threads.split(",")):
        env = dict(os.environ, OMP_NUM_THREADS=str(t))
        proc = subprocess.run([sys.executable, script, "--worker", str(t), *worker_args],
                              env=env, capture_output=True, text=True, check=True)
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        names = list(next(iter(result.values())))
        print(f"\n{t} thread(s), ms per call (ratio: aotc fp32 / this)\n")
        print(f"| {row} | " + " | ".join(names) + " |")
        print(f"|{align}|" + "--:|" * len(names))
        for key, cells in result.items():
            fp32 = cells["aotc fp32"]
            row_cells = [f"{cells[n] * 1e3:{cell}} ({fp32 / cells[n]:.2f}×)" for n in names]
            print(f"| {key} | " + " | ".join(row_cells) + " |")

if __name__ == "__main__":
    main()
