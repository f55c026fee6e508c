"""Every runtime timed ALONE in its own process, the way a user runs it: aotc, eager, ONNX
Runtime, OpenVINO (from the module and from the ONNX file), ExecuTorch (XNNPACK) and
AOTInductor, at 1 thread and at all cores.

    python benchmarks/alone.py                        # the suite: a section of RESULTS.md
    python benchmarks/alone.py --models readme_b8,resnet18_224 --runtimes aotc,eager,ort \\
        --rounds 3 --out /tmp/alone.md

The parent exports and compiles every model once for every runtime (run.py's compile step,
peers.py's adapters) and saves each model's inputs and eager outputs. Then, per thread count,
it runs R rounds; a round starts one fresh process per runtime (alone_worker.py), one after
the other on an idle machine, in an order rotated from round to round, each timing every
model on its runtime alone (OMP_NUM_THREADS and the runtime's own thread setting at n). No
other runtime's thread pool is alive in the process, so none steals the cores. The report
gives each runtime's median latency over the rounds and, per model, the median over rounds
of the per-round ratios aotc / fastest peer and aotc / eager (with their range, so that drift
shows), a PNG chart beside the tables, and the acceptance figures: models at or under 0.9x
the fastest peer, the geomean of aotc / eager.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402  (sets the private compiler caches before torch and aotc load)

import models  # noqa: E402
import peers  # noqa: E402
import report  # noqa: E402

RUNTIMES = ("aotc", "eager", "ort", "openvino", "openvino_onnx", "executorch", "aoti")
PEER_BAR, EAGER_BAR = 0.9, 0.40
BEGIN, END = "<!-- alone.py: begin -->", "<!-- alone.py: end -->"


def save_data(folder: Path, bench) -> dict:
    """The model's inputs and eager's outputs in an .npz the workers read."""
    import torch

    model, inputs = bench.build()
    with torch.inference_mode():
        outputs = run_flat(model(*inputs))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{bench.name}.npz"
    arrays = {f"in{i}": x.numpy() for i, x in enumerate(inputs)}
    arrays.update({f"out{i}": y.numpy() for i, y in enumerate(outputs)})
    np.savez(path, **arrays)
    return {"data": str(path), "n_inputs": len(inputs), "n_outputs": len(outputs)}


def run_flat(out) -> list:
    import alone_worker

    return alone_worker.flatten(out)


def artifact(entry: dict, runtime: str) -> str | None:
    if runtime == "aotc":
        return entry.get("aotc")
    return entry["peers"].get(runtime, {}).get("artifact")


def time_alone(runtime: str, threads: int, entries: list[dict], args) -> dict:
    """One fresh process timing every model on `runtime` alone: {model: result}."""
    todo = [{"name": e["name"], "artifact": artifact(e, runtime), **e["data"]} for e in entries
            if runtime == "eager" or artifact(e, runtime)]
    with tempfile.TemporaryDirectory(dir=run.BUILD) as tmp:
        spec, result = Path(tmp) / "spec.json", Path(tmp) / "result.json"
        spec.write_text(json.dumps({"runtime": runtime, "threads": threads,
                                    "batch_ms": args.batch_ms, "batches": args.batches,
                                    "entries": todo, "result": str(result)}))
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
        run.wait_for_idle(args.wait_idle)
        proc = subprocess.run([sys.executable, str(HERE / "alone_worker.py"), str(spec)],
                              env=env)
        if proc.returncode != 0 or not result.exists():  # a runtime that killed its process
            why = f"the {runtime} process exited with status {proc.returncode}"
            return {e["name"]: {"error": why} for e in todo}
        return json.loads(result.read_text())


def rotated(items: list, k: int) -> list:
    k %= len(items)
    return items[k:] + items[:k]


def median_range(xs: list[float]) -> tuple[float, float, float]:
    return statistics.median(xs), min(xs), max(xs)


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def model_row(name: str, rounds: list[dict], runtimes: list[str]) -> dict:
    """Medians and per-round ratios of one model at one thread count."""
    ms = {rt: [r[rt][name]["ms"] for r in rounds if "ms" in r[rt].get(name, {})]
          for rt in runtimes}
    errors = {rt: r[rt][name]["error"] for r in rounds for rt in runtimes
              if "error" in r[rt].get(name, {})}
    row = {"name": name, "ms": {rt: statistics.median(v) for rt, v in ms.items() if v},
           "errors": errors}
    peer_names = [rt for rt in runtimes if rt not in ("aotc", "eager")]
    vs_peer, vs_eager, fastest = [], [], []
    for r in rounds:
        t = {rt: r[rt][name]["ms"] for rt in runtimes if "ms" in r[rt].get(name, {})}
        if "aotc" not in t:
            continue
        if "eager" in t:
            vs_eager.append(t["aotc"] / t["eager"])
        present = [p for p in peer_names if p in t]
        if present:
            best = min(present, key=t.get)
            fastest.append(best)
            vs_peer.append(t["aotc"] / t[best])
    if vs_peer:
        row["vs_peer"] = median_range(vs_peer)
        row["fastest"] = max(set(fastest), key=fastest.count)
    if vs_eager:
        row["vs_eager"] = median_range(vs_eager)
    return row


def ratio_cell(r: tuple | None, bar: float | None = None) -> str:
    if r is None:
        return "–"
    text = f"{r[0]:.2f} ({r[1]:.2f}–{r[2]:.2f})"
    return f"**{text}**" if bar is not None and r[0] > bar else text


def thread_section(threads: int, rows: list[dict], runtimes: list[str]) -> tuple[list, dict]:
    label = peers.LABEL
    cols = ["model"] + [f"{label[rt]} ms" for rt in runtimes]
    cols += ["fastest peer", "aotc / fastest peer", "aotc / eager"]
    lines = [f"#### {threads} thread(s)", "", "| " + " | ".join(cols) + " |",
             "|---|" + "--:|" * (len(cols) - 1)]
    for row in rows:
        cells = [f"`{row['name']}`"]
        cells += [report.ms(row["ms"][rt]) if rt in row["ms"] else "–" for rt in runtimes]
        cells += [label.get(row.get("fastest"), "–"), ratio_cell(row.get("vs_peer"), PEER_BAR),
                  ratio_cell(row.get("vs_eager"))]
        lines.append("| " + " | ".join(cells) + " |")
    with_peer = [r for r in rows if "vs_peer" in r]
    summary = {"met": sum(r["vs_peer"][0] <= PEER_BAR for r in with_peer), "of": len(with_peer),
               "geomean_eager": geomean([r["vs_eager"][0] for r in rows if "vs_eager" in r]),
               "geomean_peer": geomean([r["vs_peer"][0] for r in with_peer])}
    lines += ["", f"{summary['met']} of {summary['of']} models at or under {PEER_BAR}× the "
              f"fastest peer; geomean aotc / fastest peer {summary['geomean_peer']:.2f}, "
              f"aotc / eager {summary['geomean_eager']:.2f} (bar {EAGER_BAR}).", ""]
    failures = [f"- `{r['name']}` {label.get(rt, rt)}: {why}" for r in rows
                for rt, why in r["errors"].items()]
    if failures:
        lines += ["Not timed (failed to load or to match eager):", ""] + failures + [""]
    return lines, summary


def chart(path: Path, by_threads: dict, runtimes: list[str]) -> bool:
    """Grouped bars per model: each runtime's latency over eager's, one panel per thread
    count. False where matplotlib is not installed."""
    try:
        import matplotlib
        import matplotlib.ticker
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    shown = [rt for rt in runtimes if rt != "eager"]
    fig, axes = plt.subplots(len(by_threads), 1, figsize=(12, 4.2 * len(by_threads)),
                             squeeze=False)
    width = 0.8 / len(shown)
    for ax, (threads, rows) in zip(axes[:, 0], by_threads.items()):
        for k, rt in enumerate(shown):
            xs = [i + (k - (len(shown) - 1) / 2) * width for i in range(len(rows))]
            ys = [r["ms"][rt] / r["ms"]["eager"] if rt in r["ms"] and "eager" in r["ms"]
                  else float("nan") for r in rows]
            ax.bar(xs, ys, width, label=peers.LABEL[rt])
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%.2g"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter("%.1f"))
        ax.set_xticks(range(len(rows)), [r["name"] for r in rows], rotation=20, ha="right",
                      fontsize=8)
        ax.set_ylabel("latency / eager (lower is better)")
        ax.set_title(f"{threads} thread(s), each runtime alone in its process")
        ax.legend(fontsize=7, ncol=len(shown))
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def render(args, meta: dict, entries: list[dict], rounds_by_threads: dict,
           runtimes: list[str], chart_name: str | None) -> tuple[str, dict, dict]:
    import torch

    cpu = report.cpu_facts()
    lines = [BEGIN, "", "### Each runtime alone in its process (`benchmarks/alone.py`)", "",
             f"- command: `{meta['command']}`",
             f"- date: {meta['date']} (wall time {meta['wall_s']:.0f} s); machine: "
             f"{cpu['cores']} logical cores, {cpu['model']}; flags: "
             f"{', '.join(cpu['flags']) or 'n/a'}; aotc at {meta['revision']}",
             f"- {versions()}; torch {torch.__version__}",
             f"- method: {args.rounds} rounds per thread count; a round runs one fresh process "
             "per runtime, back to back on an idle machine, the runtimes' order rotated from "
             f"round to round; each process times every model in {args.batches} batches of "
             f"~{args.batch_ms:.0f} ms after a warm-up and reports the median. Latencies are "
             "medians over rounds; ratios are medians (min–max) of the per-round ratios. Bold: "
             f"over {PEER_BAR}× the fastest peer.",
             "- peers: ONNX Runtime (CPU provider, all graph optimisations, intra-op threads = "
             "n, sequential); OpenVINO (f32 precision hint, n inference threads, one stream, "
             "latency hint), from `convert_model` and from the ONNX file; ExecuTorch "
             "(XNNPACK partitioner, threadpool reset to n); AOTInductor (freezing, "
             "OMP_NUM_THREADS = n); eager under torch.inference_mode. aotc runs from its "
             "numpy-only runtime with num_threads = n.", ""]
    if chart_name:
        lines += [f"![latency over eager per runtime]({chart_name})", ""]
    summaries = {}
    by_threads = {}
    for threads, rounds in rounds_by_threads.items():
        rows = [model_row(e["name"], rounds, runtimes) for e in entries]
        by_threads[threads] = rows
        section, summaries[threads] = thread_section(threads, rows, runtimes)
        lines += section
    compile_errors = [f"- `{e['name']}` {peers.LABEL[p]}: {why[:300]}" for e in entries
                      for p, why in e.get("peer_errors", {}).items()]
    compile_errors += [f"- `{e['name']}` aotc: {e['aotc_error']}" for e in entries
                       if "aotc_error" in e]
    if compile_errors:
        lines += ["Compile failures:", ""] + compile_errors + [""]
    lines.append(END)
    return "\n".join(lines) + "\n", by_threads, summaries


def versions() -> str:
    parts = []
    for module in ("onnxruntime", "openvino", "executorch"):
        try:
            from importlib.metadata import version
            parts.append(f"{module} {version(module)}")
        except Exception:
            parts.append(f"{module} not installed")
    return ", ".join(parts)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="", help="comma-separated names (default: the suite)")
    p.add_argument("--threads", default=f"1,{os.cpu_count() or 1}")
    p.add_argument("--runtimes", default=",".join(RUNTIMES),
                   help=f"comma-separated, from {', '.join(RUNTIMES)}")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batches", type=int, default=11, help="timed batches per model and process")
    p.add_argument("--batch-ms", type=float, default=150.0)
    p.add_argument("--wait-idle", type=float, default=30.0,
                   help="seconds to wait for an idle machine before each process")
    p.add_argument("--out", default=str(HERE / "RESULTS.md"),
                   help="RESULTS.md gets a section among its notes; other files are written")
    args = p.parse_args(argv)
    args.runtime_list = [r for r in args.runtimes.split(",") if r]
    unknown = [r for r in args.runtime_list if r not in RUNTIMES]
    if unknown or "aotc" not in args.runtime_list:
        raise SystemExit(f"runtimes must include aotc and come from {RUNTIMES}; got {unknown}")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    start = time.perf_counter()
    runtimes = []
    for rt in args.runtime_list:
        why = peers.available(rt) if rt in peers.PEERS else None
        if why:
            run.log(f"skipping {rt}: {why}")
        else:
            runtimes.append(rt)
    benches = models.select(args.models)
    run.BUILD.mkdir(parents=True, exist_ok=True)
    meta = {"command": "python benchmarks/alone.py " + " ".join(sys.argv[1:] if argv is None
                                                                  else argv),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "revision": report.source_revision(run.ROOT)}
    entries = run.compile_all(benches, [rt for rt in runtimes if rt in peers.PEERS], meta)
    for bench, entry in zip(benches, entries):
        entry["data"] = save_data(run.BUILD / "alone", bench)
    rounds_by_threads = {}
    for threads in [int(t) for t in args.threads.split(",")]:
        rounds = []
        for k in range(args.rounds):
            order = rotated(runtimes, k)
            run.log(f"[{threads} thread(s)] round {k + 1}/{args.rounds}: " + ", ".join(order))
            rounds.append({rt: time_alone(rt, threads, entries, args) for rt in order})
        rounds_by_threads[threads] = rounds
    meta["wall_s"] = time.perf_counter() - start
    out = Path(args.out)
    png = out.with_name("alone.png") if out.name == "RESULTS.md" else out.with_suffix(".png")
    section, by_threads, _ = render(args, meta, entries, rounds_by_threads, runtimes, None)
    if chart(png, by_threads, runtimes):
        section, _, _ = render(args, meta, entries, rounds_by_threads, runtimes, png.name)
    report.write_section(out, section, BEGIN, END)
    (run.BUILD / "alone" / "last.json").write_text(json.dumps(
        {"meta": meta, "rounds": rounds_by_threads}, indent=1))
    print(section)


if __name__ == "__main__":
    main()
