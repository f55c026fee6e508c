"""Benchmark aotc against eager PyTorch and AOTInductor on the suite in models.py.

    python benchmarks/run.py                     # full run: writes benchmarks/RESULTS.md
    python benchmarks/run.py --quick             # fewer reps, no AOTInductor; prints only
    python benchmarks/run.py --models readme_b8,encoder_s128 --threads 1 --out /tmp/r.md

The parent process exports every model, compiles it with aotc and with AOTInductor
(freezing on) and records both compile times. Each thread count is then timed in a fresh
worker subprocess started with OMP_NUM_THREADS=n, which also calls torch.set_num_threads(n)
and loads the aotc package with num_threads=n, so eager, AOTInductor and aotc run with the
same number of threads. The worker checks aotc (and AOTInductor) against eager with
torch.testing.assert_close, then times the three round-robin: one batch of iterations of
each, repeated R times, so that drift in machine load hits all three alike.

Builds go under build/bench/ (ignored): private aotc and inductor caches, cleared before
compiling so that compile times are cold (a warm-up compile of a tiny model pays the one-time
costs, reported separately), and the AOTInductor packages, cached by model name and torch
version so that re-runs do not recompile them (their recorded compile times are reused).
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUILD = ROOT / "build" / "bench"
AOTC_CACHE = BUILD / "aotc-cache"
AOTI_DIR = BUILD / "aoti"
INDUCTOR_CACHE = BUILD / "inductor-cache"
NOTES_MARKER = "<!-- notes below are kept when run.py rewrites this file -->"

# private compiler caches (they are wiped for cold compiles), chosen before aotc or
# torch._inductor read them
os.environ["AOTC_CACHE_DIR"] = str(AOTC_CACHE)
os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(INDUCTOR_CACHE)

import torch  # noqa: E402

sys.path.insert(0, str(HERE))
import models  # noqa: E402

IMPLS = ("eager", "aoti", "aotc")


# ----------------------------------------------------------------------------- compiling

def export(model: torch.nn.Module, inputs: tuple) -> torch.export.ExportedProgram:
    with torch.no_grad():
        return torch.export.export(model.eval(), inputs)


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def tiny_program():
    torch.manual_seed(0)
    tiny = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    return export(tiny, (torch.randn(2, 4),))


def warmup(compile_fn) -> float:
    """Seconds to compile a tiny model: the one-time costs every later compile reuses
    (aotc's shared kernel objects; inductor's precompiled headers and runtime)."""
    with tempfile.TemporaryDirectory(dir=BUILD) as tmp:
        return timed(compile_fn, tiny_program(), package_path=os.path.join(tmp, "tiny.pt2"))[1]


def aotc_compile(ep, package_path):
    import aotc

    return aotc.compile_and_package(ep, package_path=package_path)


def aoti_compile(ep, package_path):
    # compile with as many threads as cores: inductor then emits `#pragma omp parallel`
    # without a fixed thread count, so the package follows OMP_NUM_THREADS at run time
    torch.set_num_threads(os.cpu_count() or 1)
    return torch._inductor.aoti_compile_and_package(ep, package_path=package_path,
                                                    inductor_configs={"freezing": True})


def aoti_cached(name: str):
    """Compile seconds recorded with a cached AOTI package of this torch version, or None."""
    stamp = AOTI_DIR / f"{name}.json"
    if (AOTI_DIR / f"{name}.pt2").exists() and stamp.exists():
        info = json.loads(stamp.read_text())
        if info.get("torch") == torch.__version__:
            return info["compile_s"]
    return None


def compile_aoti(name: str, ep) -> tuple[str, float, bool]:
    """(package path, compile seconds, whether it came from an earlier run's cache)."""
    path = AOTI_DIR / f"{name}.pt2"
    cached = aoti_cached(name)
    if cached is not None:
        return str(path), cached, True
    AOTI_DIR.mkdir(parents=True, exist_ok=True)
    out, seconds = timed(aoti_compile, ep, str(path))
    (AOTI_DIR / f"{name}.json").write_text(
        json.dumps({"torch": torch.__version__, "compile_s": seconds}))
    return out, seconds, False


def compile_all(benches, with_aoti: bool, meta: dict) -> list[dict]:
    """Export and compile every benchmark; warm-up compile times go into meta."""
    # cold builds: nothing from earlier runs (AOTI packages themselves stay cached)
    shutil.rmtree(AOTC_CACHE, ignore_errors=True)
    meta["aotc_warmup_s"] = warmup(aotc_compile)
    if with_aoti and any(aoti_cached(b.name) is None for b in benches):
        shutil.rmtree(INDUCTOR_CACHE, ignore_errors=True)
        meta["aoti_warmup_s"] = warmup(aoti_compile)
    entries = []
    for bench in benches:
        model, inputs = bench.build()
        ep = export(model, inputs)
        entry = {"name": bench.name}
        try:
            path = BUILD / "aotc" / f"{bench.name}.pt2"
            path.parent.mkdir(parents=True, exist_ok=True)
            entry["aotc"], entry["aotc_compile_s"] = timed(aotc_compile, ep, str(path))
        except Exception as e:  # report and go on: one failure must not hide the rest
            entry["aotc_error"] = f"{type(e).__name__}: {e}"
        if with_aoti:
            entry["aoti"], entry["aoti_compile_s"], entry["aoti_cached"] = \
                compile_aoti(bench.name, ep)
        log(f"compiled {bench.name}: aotc {entry.get('aotc_compile_s', float('nan')):.2f} s, "
            f"aoti {entry.get('aoti_compile_s', float('nan')):.2f} s"
            + (" (cached)" if entry.get("aoti_cached") else ""))
        entries.append(entry)
    return entries


# ----------------------------------------------------------------------------- timing

def load_impls(entry: dict, threads: int) -> tuple[dict, tuple]:
    """({name: callable} for every implementation available for this entry, its inputs)."""
    import aotc

    model, inputs = models.BY_NAME[entry["name"]].build()
    fns = {"eager": model}
    if entry.get("aoti"):
        fns["aoti"] = torch._inductor.aoti_load_package(entry["aoti"])
    if entry.get("aotc"):
        fns["aotc"] = aotc.load_package(entry["aotc"], num_threads=threads)
    return fns, inputs


def check_outputs(fns: dict, inputs: tuple) -> None:
    ref = fns["eager"](*inputs)
    for name in ("aotc", "aoti"):
        if name in fns:
            torch.testing.assert_close(fns[name](*inputs), ref,
                                       msg=lambda m, n=name: f"{n} vs eager: {m}")


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
    """Time every entry of the spec at one thread count; write results next to the spec."""
    spec = json.loads(Path(spec_path).read_text())
    threads = spec["threads"]
    torch.set_num_threads(threads)
    results = []
    with torch.inference_mode():
        for entry in spec["entries"]:
            res = {"name": entry["name"]}
            try:
                fns, inputs = load_impls(entry, threads)
                check_outputs(fns, inputs)
                res.update(measure_quietest(fns, inputs, spec))
            except Exception as e:
                res["error"] = f"{type(e).__name__}: {e}"
            results.append(res)
            log(f"[{threads} thread(s)] {entry['name']}: " + (res.get("error") or "  ".join(
                f"{n} {res[n]['median_ms']:.4f} ms" for n in IMPLS if n in res)))
    Path(spec["result"]).write_text(json.dumps({"threads": threads,
                                                "torch_threads": torch.get_num_threads(),
                                                "results": results}))


def run_threads(entries: list[dict], threads: int, args) -> dict:
    """Run the worker in a fresh process with OMP_NUM_THREADS=threads."""
    runnable = [e for e in entries if "aotc" in e]
    with tempfile.TemporaryDirectory(dir=BUILD) as tmp:
        spec = Path(tmp) / "spec.json"
        result = Path(tmp) / "result.json"
        spec.write_text(json.dumps({
            "threads": threads, "reps": args.reps, "batch_ms": args.batch_ms,
            "wait_idle": args.wait_idle, "retries": args.retries, "noise_pct": args.noise_pct,
            "entries": runnable, "result": str(result)}))
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
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


# ----------------------------------------------------------------------------- report

def geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def fmt(x, digits=3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    return f"{x:.{digits}f}"


def ms(x) -> str:
    if x is None:
        return "—"
    return f"{x:.4f}" if x < 0.1 else f"{x:.3f}" if x < 10 else f"{x:.2f}"


def ratio(res: dict, a: str, b: str):
    if a in res and b in res:
        return res[a]["median_ms"] / res[b]["median_ms"]
    return None


def table(run: dict, entries: dict) -> list[str]:
    lines = [f"### {run['threads']} thread(s)", "",
             "| model | eager ms | AOTI ms | aotc ms | aotc/eager | aotc/AOTI "
             "| compile s aotc | compile s AOTI | iters × reps | spread % | other load % |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    vs_eager, vs_aoti = [], []
    for res in run["results"]:
        e = entries[res["name"]]
        if "error" in res:
            error = res["error"].replace("|", "/").replace("\n", " ")[:160]
            lines.append(f"| {res['name']} | error: {error} ||||||||||")
            continue
        r_e, r_a = ratio(res, "aotc", "eager"), ratio(res, "aotc", "aoti")
        vs_eager.append(r_e)
        vs_aoti.append(r_a)
        tries = f" (try {res['attempts']})" if res["attempts"] > 1 else ""
        lines.append(
            f"| {res['name']} | {ms(res['eager']['median_ms'])} "
            f"| {ms(res.get('aoti', {}).get('median_ms'))} | {ms(res['aotc']['median_ms'])} "
            f"| {fmt(r_e)} | {fmt(r_a)} | {fmt(e.get('aotc_compile_s'), 2)} "
            f"| {fmt(e.get('aoti_compile_s'), 1)} | {res['iters']} × {run['reps']}{tries} "
            f"| {res['noise_pct']:.0f} | {fmt(res.get('background_pct'), 0)} |")
    lines.append(f"| **geomean** | | | | **{fmt(geomean(vs_eager))}** "
                 f"| **{fmt(geomean(vs_aoti))}** | | | | | |")
    return lines + [""]


def cpu_facts() -> dict:
    facts = {"cores": os.cpu_count(), "model": platform.processor() or platform.machine(),
             "flags": []}
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return facts
    for line in info.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            facts["model"] = value.strip()
        elif key.strip() == "flags":
            facts["flags"] = sorted(f for f in value.split()
                                    if f in ("avx2", "fma", "avx512f", "avx512bw", "avx512vl",
                                             "avx512_vnni", "avx512_bf16", "amx_tile"))
            break
    return facts


def source_revision() -> str:
    """The checkout's commit, and whether src/ differs from it (read-only git calls)."""
    def git(*cmd):
        return subprocess.run(["git", "--no-optional-locks", *cmd], cwd=ROOT,
                              capture_output=True, text=True)
    head = git("rev-parse", "--short", "HEAD")
    if head.returncode != 0:
        return "unknown (not a git checkout)"
    dirty = git("diff", "--quiet", "HEAD", "--", "src").returncode != 0
    return head.stdout.strip() + (" with uncommitted changes under src/" if dirty else "")


def header(args, meta: dict) -> list[str]:
    import aotc

    cpu = cpu_facts()
    return [
        "# aotc benchmark results", "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']} (total wall time {meta['wall_s']:.0f} s)",
        f"- machine: {cpu['cores']} logical cores, {cpu['model']}; "
        f"flags: {', '.join(cpu['flags']) or 'n/a'}; {platform.system()} {platform.release()}",
        f"- load average (1 min) at start / end: {meta['load'][0]:.2f} / {meta['load'][1]:.2f}",
        f"- torch {torch.__version__}, aotc {aotc.__version__} at {meta['revision']}, "
        f"Python {platform.python_version()}",
        f"- timing: {args.reps} interleaved reps per implementation; each rep is one batch of "
        f"~{args.batch_ms:.0f} ms of back-to-back calls; table cells are medians of the "
        "per-call time over reps. 'spread %': the largest interquartile range of the three "
        "implementations relative to its median; 'other load %': CPU the rest of the machine "
        "used while the model was timed (this machine is shared). Before each model the "
        f"worker waits up to {args.wait_idle:.0f} s for an idle machine, and an attempt whose "
        f"spread exceeds {args.noise_pct:.0f}% is retried up to {args.retries} time(s), "
        "keeping the attempt with the smallest spread ('try k').",
        "- threads: every thread count runs in a fresh process with OMP_NUM_THREADS=n and "
        "torch.set_num_threads(n); aotc packages are loaded with num_threads=n. One package "
        "per model and compiler serves every thread count.",
        "- compile: wall time of a cold compile of the model, after a warm-up compile of a "
        "tiny model that pays the one-time costs (aotc: building the shared kernel objects, "
        f"{meta['aotc_warmup_s']:.1f} s this run; AOTI: "
        + (f"{meta['aoti_warmup_s']:.1f} s this run" if "aoti_warmup_s" in meta
           else "not needed this run") + "). AOTI is `aoti_compile_and_package(ep, "
        "inductor_configs={'freezing': True})`, compiled once with as many threads as cores"
        + ("; its packages (and compile times) were cached from an earlier run for: "
           + ", ".join(meta["aoti_cached"]) if meta["aoti_cached"] else "") + ".",
        "- eager: the nn.Module under torch.inference_mode. Ratios: lower is better for aotc.",
        "",
    ]


def models_section(benches) -> list[str]:
    return ["## Models", ""] + [f"- `{b.name}`: {b.description}" for b in benches] + [""]


def kept_notes(path: Path) -> list[str]:
    if path.exists():
        text = path.read_text()
        if NOTES_MARKER in text:
            return [NOTES_MARKER + text.split(NOTES_MARKER, 1)[1].rstrip("\n")]
    return [NOTES_MARKER, "", "## Notes", "", "(none yet)"]


def report(args, meta, benches, entries, runs, out: Path | None) -> str:
    by_name = {e["name"]: e for e in entries}
    lines = header(args, meta) + models_section(benches) + ["## Results", ""]
    for run in runs:
        run["reps"] = args.reps
        lines += table(run, by_name)
    failed = [e for e in entries if "aotc_error" in e]
    if failed:
        lines += ["## aotc compile failures", ""]
        lines += [f"- `{e['name']}`: {e['aotc_error']}" for e in failed] + [""]
    if out is not None:
        lines += kept_notes(out)
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- main

def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="fewer reps, shorter batches, skip AOTInductor; prints unless --out")
    p.add_argument("--models", default="", help="comma-separated names (default: all)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--out", default=None,
                   help="markdown output (default: benchmarks/RESULTS.md for full runs)")
    p.add_argument("--reps", type=int, default=None, help="round-robin repetitions")
    p.add_argument("--batch-ms", type=float, default=None, help="target ms per timed batch")
    p.add_argument("--wait-idle", type=float, default=None,
                   help="seconds to wait at most for an idle machine before timing each model "
                        "(default 20; 0 with --quick)")
    p.add_argument("--retries", type=int, default=None,
                   help="re-time a model whose spread exceeds --noise-pct (default 2; 0 quick)")
    p.add_argument("--noise-pct", type=float, default=15.0,
                   help="spread (IQR/median, %%) above which a timing attempt is retried")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.reps = args.reps or (5 if args.quick else 21)
    args.batch_ms = args.batch_ms or (15.0 if args.quick else 50.0)
    if args.wait_idle is None:
        args.wait_idle = 0.0 if args.quick else 20.0
    if args.retries is None:
        args.retries = 0 if args.quick else 2
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
            "revision": source_revision(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    BUILD.mkdir(parents=True, exist_ok=True)
    benches = models.select(args.models)
    entries = compile_all(benches, not args.quick, meta)
    meta["aoti_cached"] = [e["name"] for e in entries if e.get("aoti_cached")]
    runs = [run_threads(entries, int(n), args) for n in args.threads.split(",")]
    meta["load"].append(os.getloadavg()[0])
    meta["wall_s"] = time.perf_counter() - start
    out = Path(args.out) if args.out else None
    text = report(args, meta, benches, entries, runs, out)
    if out is not None:
        out.write_text(text)
        log(f"wrote {out}")
    print(text)


if __name__ == "__main__":
    main()
