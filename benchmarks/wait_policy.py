"""How OpenMP's wait policy costs aotc and the work a caller runs between aotc calls.

    python benchmarks/wait_policy.py                  # prints a markdown table
    python benchmarks/wait_policy.py --rounds 5 --model mlp_gelu_b64 --threads 2

After a parallel region, libgomp's worker threads spin for GOMP_SPINCOUNT iterations (300000
by default, a few milliseconds) before they sleep, so that the next region starts at once. A
caller that alternates an aotc call with its own multi-threaded pre/post-processing pays for
that spin: the aotc workers hold the cores its own threads want. Sleeping at once
(OMP_WAIT_POLICY=passive) costs aotc a futex wake-up at every kernel instead.

Each policy is measured in fresh processes (libgomp reads its environment once, when it is
loaded), every policy once per round, rounds interleaved, medians over rounds. A process
times, at `--threads` threads everywhere:
- `aotc`: back-to-back aotc calls (the model from models.py, compiled once by the parent);
- `work`: back-to-back caller work;
- `loop`: an aotc call then one unit of work, repeated; its aotc part and its work part are
  timed separately, and the CPU time the process used per loop iteration is recorded.
Two kinds of caller work:
- `numpy`: the runtime without torch (numpy inputs), the work `np.tanh(x @ w)` on
  256x512 @ 512x512 through numpy's BLAS (its own thread pool, OPENBLAS_NUM_THREADS=n);
- `torch`: torch imported first (aotc then shares torch's libgomp, hence its thread pool),
  the work `gelu(x @ w)` on the same shapes with torch.set_num_threads(n).
`default` is the runtime's own choice (neither variable set by the user: it applies in the
numpy runs; in the torch runs torch loaded libgomp first, so libgomp's own default applies),
`libgomp` is libgomp's built-in default (GOMP_SPINCOUNT=300000, which is what it uses when
neither variable is set).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# name -> the environment a process starts with (on top of the thread counts)
POLICIES = {
    "default": {},
    "libgomp": {"GOMP_SPINCOUNT": "300000"},
    "passive": {"OMP_WAIT_POLICY": "passive"},
    "active": {"OMP_WAIT_POLICY": "active"},
    "spin-1k": {"GOMP_SPINCOUNT": "1000"},
    "spin-10k": {"GOMP_SPINCOUNT": "10000"},
    "spin-30k": {"GOMP_SPINCOUNT": "30000"},
    "spin-100k": {"GOMP_SPINCOUNT": "100000"},
}
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")

CHILD = textwrap.dedent("""
    import json, os, resource, sys, time
    package, threads, kind, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    if kind == "torch":
        import torch
        torch.set_num_threads(threads)
        rng = torch.Generator().manual_seed(0)
        x, w = torch.randn(256, 512, generator=rng), torch.randn(512, 512, generator=rng) / 30
        def work():
            torch.nn.functional.gelu(x @ w)
    else:
        import numpy as np
        rng = np.random.default_rng(0)
        x = rng.standard_normal((256, 512), dtype=np.float32)
        w = rng.standard_normal((512, 512), dtype=np.float32) / 30
        def work():
            np.tanh(x @ w)
    import numpy as np
    from aotc.runtime import load_package
    model = load_package(package, num_threads=threads)
    inputs = [np.load(f) for f in sys.argv[5:]]
    if kind == "torch":
        inputs = [torch.from_numpy(a) for a in inputs]
    def aotc_call():
        model(*inputs)
    def cpu():
        u = resource.getrusage(resource.RUSAGE_SELF)
        return u.ru_utime + u.ru_stime
    def alone(fn):
        for _ in range(5):
            fn()
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds / 3:
            fn()
            n += 1
        return (time.perf_counter() - t0) * 1e3 / n
    res = {"aotc": alone(aotc_call), "work": alone(work)}
    for _ in range(5):
        aotc_call(); work()
    a = w_ = 0.0
    n, c0, t0 = 0, cpu(), time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        t1 = time.perf_counter(); aotc_call()
        t2 = time.perf_counter(); work()
        t3 = time.perf_counter()
        a += t2 - t1; w_ += t3 - t2; n += 1
    res.update(loop_aotc=a * 1e3 / n, loop_work=w_ * 1e3 / n,
               loop_cpu=(cpu() - c0) * 1e3 / n)
    print(json.dumps(res))
""")


def compile_model(name: str, folder: Path) -> tuple[str, list[str]]:
    """The aotc package and its saved inputs (.npy files) for a model of models.py."""
    import numpy as np
    import torch

    import aotc

    sys.path.insert(0, str(HERE))
    import models

    model, inputs = models.BY_NAME[name].build()
    with torch.no_grad():
        ep = torch.export.export(model, inputs)
    package = aotc.compile_and_package(ep, package_path=str(folder / f"{name}.pt2"))
    files = []
    for k, x in enumerate(inputs):
        files.append(str(folder / f"input{k}.npy"))
        np.save(files[-1], x.numpy())
    return package, files


def measure(policy: str, kind: str, package: str, inputs: list[str], args) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in WAIT_VARIABLES}
    env.update(POLICIES[policy], OMP_NUM_THREADS=str(args.threads),
               OPENBLAS_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    proc = subprocess.run([sys.executable, "-c", CHILD, package, str(args.threads), kind,
                           str(args.seconds), *inputs], env=env, capture_output=True, text=True,
                          timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"{policy}/{kind} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(results: dict, kinds: list[str], policies: list[str]) -> list[str]:
    lines = []
    for kind in kinds:
        lines += [f"#### caller work: {kind}", "",
                  "| policy | aotc alone ms | work alone ms | loop: aotc ms | loop: work ms "
                  "| loop total ms | CPU ms per loop |", "|---|--:|--:|--:|--:|--:|--:|"]
        for policy in policies:
            runs = results[kind][policy]
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            total = med["loop_aotc"] + med["loop_work"]
            lines.append(f"| {policy} | {med['aotc']:.3f} | {med['work']:.3f} "
                         f"| {med['loop_aotc']:.3f} | {med['loop_work']:.3f} | {total:.3f} "
                         f"| {med['loop_cpu']:.2f} |")
        lines.append("")
    return lines


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="encoder_s128", help="a model name of models.py")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--rounds", type=int, default=3, help="fresh processes per policy and work")
    p.add_argument("--seconds", type=float, default=1.0, help="length of each process's loop")
    p.add_argument("--kinds", default="numpy,torch", help="caller work: numpy, torch or both")
    p.add_argument("--policies", default="default,libgomp,passive,spin-10k,spin-30k",
                   help=f"comma-separated, among {', '.join(POLICIES)}")
    args = p.parse_args(argv)
    kinds, policies = args.kinds.split(","), args.policies.split(",")
    unknown = [x for x in policies if x not in POLICIES]
    if unknown:
        raise SystemExit(f"unknown policies {unknown}; known: {list(POLICIES)}")
    with tempfile.TemporaryDirectory() as tmp:
        package, inputs = compile_model(args.model, Path(tmp))
        results: dict = {k: {p: [] for p in policies} for k in kinds}
        for r in range(args.rounds):
            for kind in kinds:
                for policy in policies:
                    res = measure(policy, kind, package, inputs, args)
                    results[kind][policy].append(res)
                    print(json.dumps({"round": r, "kind": kind, "policy": policy, **res}),
                          file=sys.stderr, flush=True)
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    load = os.getloadavg()[0]
    print(f"### wait policy: `{args.model}` at {args.threads} threads, {args.rounds} rounds "
          f"(medians), load average {load:.2f} at the end\n")
    print("\n".join(table(results, kinds, policies)))


if __name__ == "__main__":
    main()
