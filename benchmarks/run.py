"""Benchmark aotc against eager PyTorch, AOTInductor, ONNX Runtime and OpenVINO on the
suite in models.py, at 1 thread and at all cores.

    python benchmarks/run.py                     # full run: writes benchmarks/RESULTS.md
    python benchmarks/run.py --quick             # fewer reps, no AOTInductor; prints only
    python benchmarks/run.py --models readme_b8,encoder_s128 --threads 1 --peers ort --out /tmp/r.md

The parent process exports every model and compiles it with aotc and with each peer
(peers.py), recording the compile times. Timing runs in fresh worker subprocesses, one per
(thread count, peer): each starts with OMP_NUM_THREADS=n, calls torch.set_num_threads(n),
loads the aotc package with num_threads=n and the peer with n threads, checks aotc and the
peer against eager, then times the three round-robin (one batch of iterations of each,
repeated R times) so that drift in machine load hits all three alike. One peer per process:
runtimes whose idle threads spin after a call steal cores from whichever runtime runs next,
so several peers in one process would distort each other at more than one thread.
A full run then times the shipped GEMM against the FMA peak (gemm.py, in a process of its
own, at the same thread counts) and reports it beside the models, with its bars.

Builds go under build/bench/ (ignored): private aotc and inductor caches, cleared before
compiling so that compile times are cold (a warm-up compile of a tiny model pays the one-time
costs, reported separately), the ONNX and OpenVINO files, and the AOTInductor packages, cached
by model name and torch version so that re-runs do not recompile them (their recorded compile
times are reused).
"""
from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUILD = ROOT / "build" / "bench"
AOTC_CACHE = BUILD / "aotc-cache"
INDUCTOR_CACHE = BUILD / "inductor-cache"

# private compiler caches (they are wiped for cold compiles), chosen before aotc or
# torch._inductor read them
os.environ["AOTC_CACHE_DIR"] = str(AOTC_CACHE)
os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(INDUCTOR_CACHE)

import torch  # noqa: E402

sys.path.insert(0, str(HERE))
import models  # noqa: E402
import peers  # noqa: E402
import report  # noqa: E402

PEER_TOLERANCE = {"rtol": 1e-4, "atol": 1e-4}


# ----------------------------------------------------------------------------- compiling

def export(model: torch.nn.Module, inputs: tuple) -> torch.export.ExportedProgram:
    with torch.no_grad():
        return torch.export.export(model.eval(), inputs)


def tiny_program():
    torch.manual_seed(0)
    tiny = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    return export(tiny, (torch.randn(2, 4),))


def warmup(compile_fn) -> float:
    """Seconds to compile a tiny model: the one-time costs every later compile reuses
    (aotc's shared kernel objects; inductor's precompiled headers and runtime)."""
    with tempfile.TemporaryDirectory(dir=BUILD) as tmp:
        return peers.timed(compile_fn, tiny_program(), package_path=os.path.join(tmp, "t.pt2"))[1]


def aotc_compile(ep, package_path):
    import aotc

    return aotc.compile_and_package(ep, package_path=package_path)


def quiet_exporters() -> None:
    """torch.onnx and OpenVINO's converter log and warn per model; keep the run readable."""
    warnings.filterwarnings("ignore")
    for name in ("torch.onnx", "torch._dynamo", "torch.export", "onnxscript"):
        logging.getLogger(name).setLevel(logging.ERROR)


def compile_all(benches, peer_names: list[str], meta: dict) -> list[dict]:
    """Export and compile every benchmark; warm-up compile times go into meta."""
    quiet_exporters()
    # cold builds: nothing from earlier runs (AOTI packages themselves stay cached)
    shutil.rmtree(AOTC_CACHE, ignore_errors=True)
    meta["aotc_warmup_s"] = warmup(aotc_compile)
    if "aoti" in peer_names and not all(peers.aoti_is_cached(BUILD / "aoti", b.name)
                                        for b in benches):
        shutil.rmtree(INDUCTOR_CACHE, ignore_errors=True)
        meta["aoti_warmup_s"] = warmup(peers.aoti_compile)
    entries = []
    for bench in benches:
        model, inputs = bench.build()
        ep = export(model, inputs)
        entry: dict = {"name": bench.name, "peers": {}, "peer_errors": {}}
        try:
            path = BUILD / "aotc" / f"{bench.name}.pt2"
            path.parent.mkdir(parents=True, exist_ok=True)
            entry["aotc"], entry["aotc_compile_s"] = peers.timed(aotc_compile, ep, str(path))
        except Exception as e:  # report and go on: one failure must not hide the rest
            entry["aotc_error"] = f"{type(e).__name__}: {e}"
        for peer in peer_names:
            try:
                entry["peers"][peer] = peers.compile_peer(peer, BUILD, bench.name, model, inputs, ep)
            except Exception as e:
                entry["peer_errors"][peer] = f"{type(e).__name__}: {e}"
        log(f"compiled {bench.name}: aotc {entry.get('aotc_compile_s', float('nan')):.2f} s, "
            + ", ".join(f"{p} {i['compile_s']:.2f} s" + (" (cached)" if i.get("cached") else "")
                        for p, i in entry["peers"].items())
            + "".join(f", {p} FAILED" for p in entry["peer_errors"]))
        entries.append(entry)
    return entries


# ----------------------------------------------------------------------------- timing

def load_impls(entry: dict, threads: int, peer: str | None) -> tuple[dict, tuple, dict]:
    """({name: callable} for eager, aotc and the peer where each loads, the inputs,
    {name: why it did not load})."""
    import aotc

    model, inputs = models.BY_NAME[entry["name"]].build()
    fns, errors = {"eager": model}, {}
    if entry.get("aotc"):
        fns["aotc"] = aotc.load_package(entry["aotc"], num_threads=threads)
    if peer and peer in entry["peers"]:
        try:
            fns[peer] = peers.load_peer(peer, entry["peers"][peer]["artifact"], threads)
        except Exception as e:
            errors[peer] = f"load failed: {type(e).__name__}: {e}"
    elif peer:
        errors[peer] = entry["peer_errors"].get(peer, "not compiled")
    return fns, inputs, errors


def check_outputs(fns: dict, inputs: tuple) -> dict:
    """Drop every implementation whose outputs differ from eager's; {name: the mismatch}."""
    ref = fns["eager"](*inputs)
    errors = {}
    for name in [n for n in fns if n != "eager"]:
        tolerance = {} if name == "aotc" else PEER_TOLERANCE
        try:
            torch.testing.assert_close(fns[name](*inputs), ref, **tolerance)
        except Exception as e:
            errors[name] = "mismatch vs eager: " + " ".join(str(e).split())[:300]
            del fns[name]
    return errors


def per_iter_ms(fn, inputs, iters: int) -> float:
    t0 = time.perf_counter()
    for _ in range(iters):
        fn(*inputs)
    return (time.perf_counter() - t0) * 1e3 / iters


def calibrate(fns: dict, inputs: tuple, batch_ms: float) -> int:
    """Warm every implementation up; iterations per batch so the slowest takes ~batch_ms.
    The fastest of three probes is used, so a burst of outside load does not shrink batches."""
    slowest = 0.0
    for fn in fns.values():
        per_iter_ms(fn, inputs, 3)
        slowest = max(slowest, min(per_iter_ms(fn, inputs, 3) for _ in range(3)))
    return max(1, min(5000, round(batch_ms / max(slowest, 1e-4))))


def time_interleaved(fns: dict, inputs: tuple, iters: int, reps: int) -> dict:
    """Per-iteration ms of each batch: one batch of each implementation per rep, the
    starting implementation rotating from rep to rep."""
    names = list(fns)
    samples = {n: [] for n in names}
    for r in range(reps):
        for n in names[r % len(names):] + names[:r % len(names)]:
            samples[n].append(per_iter_ms(fns[n], inputs, iters))
    return samples


def summarize(samples: list[float]) -> dict:
    q = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    return {"median_ms": statistics.median(samples), "iqr_pct": 100 * (q[2] - q[0]) / q[1]}


def measure(fns: dict, inputs: tuple, spec: dict) -> dict:
    """One timing attempt, with the share of the machine other processes used meanwhile."""
    waited = wait_for_idle(spec["wait_idle"])
    iters = calibrate(fns, inputs, spec["batch_ms"])
    busy0, own0, t0 = cpu_busy_seconds(), own_cpu_seconds(), time.perf_counter()
    samples = time_interleaved(fns, inputs, iters, spec["reps"])
    busy1, own1, t1 = cpu_busy_seconds(), own_cpu_seconds(), time.perf_counter()
    res = {"iters": iters, "waited_s": waited, **{n: summarize(s) for n, s in samples.items()}}
    res["noise_pct"] = max(res[n]["iqr_pct"] for n in samples)
    if busy0 is not None:
        other = (busy1 - busy0) - (own1 - own0)
        res["background_pct"] = max(0.0, 100 * other / ((t1 - t0) * (os.cpu_count() or 1)))
    return res


def measure_quietest(fns: dict, inputs: tuple, spec: dict) -> dict:
    """Time up to 1 + retries times while the spread is over noise_pct; keep the attempt with
    the smallest spread (all implementations of an attempt share its conditions)."""
    attempts = []
    for _ in range(1 + spec["retries"]):
        attempts.append(measure(fns, inputs, spec))
        if attempts[-1]["noise_pct"] <= spec["noise_pct"]:
            break
    best = min(attempts, key=lambda a: a["noise_pct"])
    return {**best, "attempts": len(attempts)}


def worker(spec_path: str) -> None:
    """Time every entry of the spec at one thread count against one peer; write the results
    next to the spec."""
    spec = json.loads(Path(spec_path).read_text())
    threads, peer = spec["threads"], spec["peer"]
    torch.set_num_threads(threads)
    quiet_exporters()
    results = []
    with torch.inference_mode():
        for entry in spec["entries"]:
            res: dict = {"name": entry["name"], "reps": spec["reps"]}
            try:
                fns, inputs, errors = load_impls(entry, threads, peer)
                errors.update(check_outputs(fns, inputs))
                res["errors"] = errors
                if len(fns) > 1:
                    measured = measure_quietest(fns, inputs, spec)
                    spreads = {n: measured[n]["iqr_pct"] for n in fns}
                    res["timed"] = {n: measured.pop(n)["median_ms"] for n in fns}
                    res["spreads"] = spreads
                    res.update(measured)
            except Exception as e:
                res["errors"] = {"run": f"{type(e).__name__}: {e}"}
            results.append(res)
            log(f"[{threads} thread(s), {peer or 'no peer'}] {entry['name']}: "
                + "  ".join(f"{n} {v:.4f} ms" for n, v in res.get("timed", {}).items())
                + "".join(f"  {n}: {v[:120]}" for n, v in res["errors"].items()))
    Path(spec["result"]).write_text(json.dumps({"threads": threads, "peer": peer,
                                                "results": results}))


def run_worker(entries: list[dict], threads: int, peer: str | None, args) -> dict:
    """Run the worker in a fresh process with OMP_NUM_THREADS=threads."""
    runnable = [e for e in entries if "aotc" in e or e["peers"]]
    with tempfile.TemporaryDirectory(dir=BUILD) as tmp:
        spec = Path(tmp) / "spec.json"
        result = Path(tmp) / "result.json"
        spec.write_text(json.dumps({
            "threads": threads, "peer": peer, "reps": args.reps, "batch_ms": args.batch_ms,
            "wait_idle": args.wait_idle, "retries": args.retries, "noise_pct": args.noise_pct,
            "entries": runnable, "result": str(result)}))
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
        if args.gomp_spincount is not None:
            env["GOMP_SPINCOUNT"] = str(args.gomp_spincount)
        subprocess.run([sys.executable, __file__, "--worker", str(spec)], env=env, check=True)
        return json.loads(result.read_text())


# ----------------------------------------------------------------------------- machine load

def cpu_busy_seconds():
    """Machine-wide busy CPU seconds since boot (Linux /proc/stat; None elsewhere)."""
    try:
        ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # minus idle, iowait


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def wait_for_idle(max_wait_s: float, busy_below: float = 0.10) -> float:
    """Wait (up to max_wait_s) until the machine is less than busy_below busy over a
    one-second window; returns the seconds waited. Call it while this process is idle."""
    start = time.perf_counter()
    while time.perf_counter() - start < max_wait_s:
        b0 = cpu_busy_seconds()
        if b0 is None:
            break
        time.sleep(1.0)
        if (cpu_busy_seconds() - b0) / (os.cpu_count() or 1) < busy_below:
            break
        if time.perf_counter() - start < 1.5:
            log("machine busy; waiting for it to go idle")
    return time.perf_counter() - start


# ----------------------------------------------------------------------------- main

def run_gemm(args) -> dict:
    """The GEMM kernels against the FMA peak (gemm.py) in a process of their own, at the run's
    thread counts: {"rows", "gemv", "load", "wall"}."""
    out = BUILD / "gemm.json"
    cmd = [sys.executable, str(HERE / "gemm.py"), "--threads", args.threads, "--no-write",
           "--json", str(out)] + (["--quick"] if args.quick else [])
    log("timing the GEMM kernels: " + " ".join(cmd[1:]))
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="fewer reps, shorter batches, no AOTInductor unless named in --peers; "
                        "prints unless --out")
    p.add_argument("--models", default="", help="comma-separated names (default: the suite)")
    p.add_argument("--threads", default=f"1,{os.cpu_count() or 1}",
                   help="comma-separated thread counts (default: 1 and all cores)")
    p.add_argument("--peers", default=None,
                   help="comma-separated peers among aoti,ort,openvino (default: all; "
                        "ort,openvino with --quick; empty: eager and aotc only)")
    p.add_argument("--out", default=None,
                   help="markdown output (default: benchmarks/RESULTS.md for full runs)")
    p.add_argument("--reps", type=int, default=None, help="round-robin repetitions")
    p.add_argument("--batch-ms", type=float, default=None, help="target ms per timed batch")
    p.add_argument("--wait-idle", type=float, default=None,
                   help="seconds to wait at most for an idle machine before timing each model "
                        "(default 2; 0 with --quick)")
    p.add_argument("--retries", type=int, default=None,
                   help="re-time a model whose spread exceeds --noise-pct (default 0)")
    p.add_argument("--noise-pct", type=float, default=15.0,
                   help="spread (IQR/median, %%) above which a timing attempt is retried")
    p.add_argument("--gomp-spincount", type=int, default=None,
                   help="GOMP_SPINCOUNT for the timing workers (default: libgomp's own); the "
                        "workers import torch first, so eager, AOTI and aotc share one libgomp "
                        "and all take it")
    p.add_argument("--gemm", action=argparse.BooleanOptionalAction, default=None,
                   help="also time the GEMM kernels against the FMA peak (gemm.py) in this run "
                        "(default: on, off with --quick)")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.reps = args.reps or (5 if args.quick else 11)
    args.batch_ms = args.batch_ms or (15.0 if args.quick else 40.0)
    if args.wait_idle is None:
        args.wait_idle = 0.0 if args.quick else 2.0
    if args.retries is None:
        args.retries = 0
    if args.gemm is None:
        args.gemm = not args.quick
    if args.peers is None:
        args.peers = "ort,openvino" if args.quick else ",".join(peers.PEERS)
    args.peer_list = [p for p in args.peers.split(",") if p]
    unknown = [p for p in args.peer_list if p not in peers.PEERS]
    if unknown:
        raise SystemExit(f"unknown peer(s) {unknown}; known: {list(peers.PEERS)}")
    if args.out is None and not args.quick:
        args.out = str(HERE / "RESULTS.md")
    return args


def command_line() -> str:
    script = Path(sys.argv[0]).resolve()
    try:
        script = script.relative_to(ROOT)
    except ValueError:
        pass
    return " ".join(["python", str(script), *sys.argv[1:]])


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        return worker(args.worker)
    start = time.perf_counter()
    meta = {"command": command_line(), "load": [os.getloadavg()[0]],
            "revision": report.source_revision(ROOT),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    BUILD.mkdir(parents=True, exist_ok=True)
    missing = {p: why for p in args.peer_list if (why := peers.available(p))}
    for p, why in missing.items():
        log(f"skipping {p}: {why}")
    meta["peers"] = [p for p in args.peer_list if p not in missing]
    benches = models.select(args.models)
    entries = compile_all(benches, meta["peers"], meta)
    runs = {}
    for n in (int(t) for t in args.threads.split(",")):
        runs[n] = {p: run_worker(entries, n, p, args) for p in meta["peers"] or [None]}
    if args.gemm:
        meta["gemm"] = run_gemm(args)
    meta["load"].append(os.getloadavg()[0])
    meta["wall_s"] = time.perf_counter() - start
    out = Path(args.out) if args.out else None
    text = report.render(args, meta, benches, entries, runs, out)
    if out is not None:
        out.write_text(text)
        log(f"wrote {out}")
    print(text)


if __name__ == "__main__":
    main()
