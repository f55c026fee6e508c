"""Two aotc packages of one CNN from cnn_models.py, timed in one process: the calling thread's
CPU time, interleaved rounds, medians and spreads. For before/after figures of a compiler
change: compile each package with its own source tree, then time both with one runtime.

    PYTHONPATH=<tree> python benchmarks/package_ab.py compile resnet18 before.pt2
    python benchmarks/package_ab.py time before.pt2 after.pt2 [--rounds 21]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cnn_models  # noqa: E402

MODELS = {"resnet18": cnn_models.ResNet18, "mobilenetv2": cnn_models.MobileNetV2}


def main() -> None:
    import aotc

    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compile")
    c.add_argument("model", choices=sorted(MODELS))
    c.add_argument("out")
    t = sub.add_parser("time")
    t.add_argument("a")
    t.add_argument("b")
    t.add_argument("--rounds", type=int, default=21)
    t.add_argument("--calls", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    x = torch.randn(1, 3, 224, 224)
    if args.cmd == "compile":
        torch.manual_seed(0)
        ep = torch.export.export(MODELS[args.model]().eval(), (x,))
        aotc.compile_and_package(ep, package_path=args.out)
        return
    models = {k: aotc.load_package(p, num_threads=1) for k, p in (("A", args.a), ("B", args.b))}
    torch.testing.assert_close(models["A"](x), models["B"](x), rtol=1e-3, atol=1e-3)
    samples: dict[str, list[float]] = {k: [] for k in models}
    for _ in range(args.rounds):
        for k, f in models.items():
            start = time.thread_time()
            for _ in range(args.calls):
                f(x)
            samples[k].append((time.thread_time() - start) / args.calls * 1e3)
    med = {k: statistics.median(v) for k, v in samples.items()}
    for k, v in samples.items():
        print(f"{k}: {med[k]:.2f} ms (spread {min(v):.2f}-{max(v):.2f})")
    print(f"B/A {med['B'] / med['A']:.3f}")


if __name__ == "__main__":
    main()
