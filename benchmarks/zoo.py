"""The model zoo of the test suite: cold compile time and speed against eager.

    python benchmarks/zoo.py                       # every zoo model, 1 thread
    python benchmarks/zoo.py --models resnet,swin --batch 4 --threads 2

The models are the ones `tests/e2e/test_architectures.py` and `tests/e2e/test_half.py`
check against eager (random weights, eval mode, dynamic batch and sizes). Each is exported
with its dynamic shapes and compiled cold (as in compile_time.py: a private cache whose
shipped kernels are built first, the model builds removed before each compile; wall and CPU
seconds, the CPU figure counting the C++ compiler). It then runs at a larger batch than its
export example, interleaved with eager in one process, and the table gives the medians and
the ratio aotc/eager.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))

import torch  # noqa: E402
from compile_time import BUILD, compile_once  # noqa: E402
from run import calibrate, summarize, time_interleaved  # noqa: E402
from test_architectures import ARCHITECTURES, _randomize_norms  # noqa: E402
from test_half import LlamaBlock  # noqa: E402

import aotc  # noqa: E402
from aotc.cli import main as cli  # noqa: E402

LLAMA_SEQ = 64


def zoo() -> dict:
    """name -> (model, example args, dynamic shapes, args to time at `batch`)."""
    out = {}
    for name, (make, args, dynamic, _) in ARCHITECTURES.items():
        def bench_args(batch, args=args):
            return tuple(a[:1].repeat(batch, *[1] * (a.dim() - 1)) for a in args)
        out[name] = (lambda make=make: _randomize_norms(make()).eval(), args, dynamic, bench_args)
    out["llama_block_bf16"] = (
        lambda: LlamaBlock().to(torch.bfloat16).eval(),
        (torch.randn(1, 12, 64, dtype=torch.bfloat16),),
        lambda: {"x": {1: torch.export.Dim("seq", min=2, max=LLAMA_SEQ)}},
        lambda batch: (torch.randn(1, LLAMA_SEQ, 64, dtype=torch.bfloat16),))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", help="comma-separated zoo names (default: all)")
    p.add_argument("--batch", type=int, default=8, help="batch the models run at")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=11)
    p.add_argument("--batch-ms", type=float, default=300.0)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    BUILD.mkdir(parents=True, exist_ok=True)
    cli(["prepare"])
    models = zoo()
    names = args.models.split(",") if args.models else list(models)
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {args.threads} thread(s), batch {args.batch}, "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print("| model | compile s | CPU s | eager ms | aotc ms | aotc/eager |")
    print("|---|--:|--:|--:|--:|--:|")
    for name in names:
        make, example, dynamic, bench_args = models[name]
        torch.manual_seed(0)
        model = make()
        c = compile_once(name, model, example, dynamic_shapes=dynamic())
        compiled = aotc.load_package(BUILD / f"{name}.pt2", num_threads=args.threads)
        inputs = bench_args(args.batch)
        with torch.no_grad():
            torch.testing.assert_close(compiled(*inputs), model(*inputs), rtol=5e-2, atol=5e-2)
            fns = {"eager": model, "aotc": compiled}
            iters = calibrate(fns, inputs, args.batch_ms)
            t = {n: summarize(s)["median_ms"]
                 for n, s in time_interleaved(fns, inputs, iters, args.reps).items()}
        print(f"| {name} | {c['total']:.2f} | {c['cpu']:.2f} | {t['eager']:.2f} | "
              f"{t['aotc']:.2f} | {t['aotc'] / t['eager']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
