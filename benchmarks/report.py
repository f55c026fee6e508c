"""Turn the timing workers' results into benchmarks/RESULTS.md: per thread count a table of
medians and ratios (aotc against eager and against each peer), geomeans over the suite, flags
for models slower than 1.1x eager or 1.3x the fastest peer, the acceptance targets, and a
compile-time table."""
from __future__ import annotations

import math
import os
import platform
import statistics
import subprocess
from pathlib import Path

import gemm
import torch

from peers import LABEL

NOTES_MARKER = "<!-- notes below are kept when run.py rewrites this file -->"
# acceptance targets at every thread count: geomean bounds over the suite, per-model bounds
TARGETS = {"aotc/eager": 0.70, "aotc/aoti": 0.80, "aotc/ort": 1.00}
EAGER_FLAG, PEER_FLAG = 1.1, 1.3


def geomean(xs) -> float:
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


def combine(name: str, by_peer: dict, peers: list[str]) -> dict:
    """One model at one thread count, from the processes that each timed eager, aotc and one
    peer: aotc/eager is the median of the per-process ratios; a peer's ratios come from its
    own process (same conditions)."""
    row: dict = {"name": name, "errors": [], "peer": {}}
    eager_ms, aotc_ms, vs_eager, noise, load = [], [], [], [], []
    for peer, res in by_peer.items():
        if res is None:
            continue
        row["errors"] += [f"{LABEL.get(k, k)}: {v}" for k, v in res.get("errors", {}).items()]
        if "eager" not in res.get("timed", {}):
            continue
        t = res["timed"]
        eager_ms.append(t["eager"])
        spreads = res.get("spreads") or {"?": res["noise_pct"]}
        noise += [(v, k) for k, v in spreads.items()]
        if res.get("background_pct") is not None:
            load.append(res["background_pct"])
        if "aotc" in t:
            aotc_ms.append(t["aotc"])
            vs_eager.append(t["aotc"] / t["eager"])
        if peer in t:
            row["peer"][peer] = {"ms": t[peer], "vs_eager": t[peer] / t["eager"],
                                 "aotc_vs": t["aotc"] / t[peer] if "aotc" in t else None}
        row.setdefault("iters", []).append(f"{res['iters']}×{res['reps']}"
                                           + (f" (try {res['attempts']})" if res["attempts"] > 1
                                              else ""))
    row["eager_ms"] = statistics.median(eager_ms) if eager_ms else None
    row["aotc_ms"] = statistics.median(aotc_ms) if aotc_ms else None
    row["aotc/eager"] = statistics.median(vs_eager) if vs_eager else None
    row["noise_pct"] = max(noise)[0] if noise else None
    row["noisiest"] = LABEL.get(max(noise)[1], max(noise)[1]) if noise else ""
    row["aotc_noise_pct"] = max((v for v, k in noise if k == "aotc"), default=None)
    row["background_pct"] = max(load) if load else None
    timed_peers = [p for p in peers if p in row["peer"]]
    flags = []
    if row["aotc/eager"] is not None and row["aotc/eager"] > EAGER_FLAG:
        flags.append(f">{EAGER_FLAG}× eager")
    if timed_peers and row["aotc/eager"] is not None:
        fastest = min(timed_peers, key=lambda p: row["peer"][p]["vs_eager"])
        row["fastest"] = fastest
        worst = row["peer"][fastest]["aotc_vs"]
        if worst is not None and worst > PEER_FLAG:
            flags.append(f">{PEER_FLAG}× {LABEL[fastest]}")
    row["flags"] = flags
    return row


def spread_cell(row: dict) -> str:
    """The worst spread, whose it was, and aotc's own."""
    if row["noise_pct"] is None:
        return ""
    cell = f"{fmt(row['noise_pct'], 0)} ({row['noisiest']})"
    if row["noisiest"] != "aotc" and row["aotc_noise_pct"] is not None:
        cell += f", aotc {fmt(row['aotc_noise_pct'], 0)}"
    return cell


def thread_table(threads: int, rows: list[dict], peers: list[str]) -> tuple[list[str], dict]:
    cols = ["model", "eager ms", "aotc ms"] + [f"{LABEL[p]} ms" for p in peers] + ["aotc/eager"]
    cols += [f"{LABEL[p]}/eager" for p in peers] + [f"aotc/{LABEL[p]}" for p in peers]
    cols += ["flags", "iters×reps", "spread %", "other load %"]
    align = ["---"] + ["--:"] * (len(cols) - 5) + ["---", "--:", "--:", "--:"]
    lines = [f"### {threads} thread(s)", "", "| " + " | ".join(cols) + " |",
             "|" + "|".join(align) + "|"]
    means: dict = {"aotc/eager": [], **{f"{p}/eager": [] for p in peers},
                   **{f"aotc/{p}": [] for p in peers}}
    for row in rows:
        if row["aotc/eager"] is None and not row["peer"]:
            why = "; ".join(row["errors"]).replace("|", "/").replace("\n", " ")[:200]
            lines.append(f"| {row['name']} | error: {why} |" + " |" * (len(cols) - 2))
            continue
        cells = [row["name"], ms(row["eager_ms"]), ms(row["aotc_ms"])]
        cells += [ms(row["peer"].get(p, {}).get("ms")) for p in peers]
        cells.append(fmt(row["aotc/eager"]))
        means["aotc/eager"].append(row["aotc/eager"])
        for p in peers:
            v = row["peer"].get(p, {}).get("vs_eager")
            cells.append(fmt(v))
            means[f"{p}/eager"].append(v)
        for p in peers:
            v = row["peer"].get(p, {}).get("aotc_vs")
            cells.append(("**" + fmt(v) + "**") if p == row.get("fastest") and v else fmt(v))
            means[f"aotc/{p}"].append(v)
        notes = row["flags"] + [f"{e}"[:120].replace("|", "/") for e in row["errors"]]
        cells += ["; ".join(notes) or "", ", ".join(row.get("iters", [])),
                  spread_cell(row), fmt(row["background_pct"], 0)]
        lines.append("| " + " | ".join(cells) + " |")
    gm = {k: geomean(v) for k, v in means.items()}
    cells = ["**geomean**", "", ""] + [""] * len(peers) + [f"**{fmt(gm['aotc/eager'])}**"]
    cells += [f"**{fmt(gm[f'{p}/eager'])}**" for p in peers]
    cells += [f"**{fmt(gm[f'aotc/{p}'])}**" for p in peers] + ["", "", "", ""]
    lines.append("| " + " | ".join(cells) + " |")
    return lines + [""], gm


def acceptance(summary: dict, rows_by_threads: dict) -> list[str]:
    lines = ["## Acceptance targets (this run)", ""]
    for threads, gm in summary.items():
        parts = []
        for key, bound in TARGETS.items():
            name = f"geomean {key.replace('aoti', 'AOTI').replace('ort', 'ORT')}"
            value = gm.get(key, float("nan"))
            if not math.isfinite(value):
                parts.append(f"{name} ≤ {bound:.2f}: not measured")
                continue
            parts.append(f"{name} {fmt(value)} ≤ {bound:.2f}: "
                         f"{'met' if value <= bound else 'NOT met'}")
        flagged = [f"{r['name']} ({', '.join(r['flags'])})" for r in rows_by_threads[threads]
                   if r["flags"]]
        parts.append("no model slower than 1.1× eager or 1.3× the fastest peer: "
                     + ("met" if not flagged else "NOT met: " + "; ".join(flagged)))
        lines.append(f"- {threads} thread(s): " + "; ".join(parts) + ".")
    return lines + [""]


def gemm_section(result: dict) -> list[str]:
    """The GEMM bars (continuing the acceptance list), then the GEMM tables of this run."""
    rows = [tuple(r) for r in result["rows"]]
    gemv = {(m, t): (ours, theirs) for m, t, ours, theirs in result["gemv"]}
    load = result["load"]
    return (gemm.acceptance(rows, gemv)
            + ["", "## GEMM against the FMA peak", "",
               f"`benchmarks/gemm.py`, run by this command after the models (load average "
               f"{load[0]:.2f} / {load[1]:.2f} before / after), each ISA build against the "
               "peak of its own FMA loop.", ""]
            + gemm.tables(rows, gemv, result["wall"]) + [""])


def compile_table(entries: list[dict], peers: list[str]) -> list[str]:
    cols = ["model", "aotc s"] + [f"{LABEL[p]} s" for p in peers]
    lines = ["## Compile time", "",
             "Wall seconds per model, cold (after the warm-up below). ORT: torch.onnx.export + "
             "session creation; OpenVINO: convert_model + compile_model; AOTI: "
             "aoti_compile_and_package with freezing ('cached': timed on an earlier run, its "
             "package reused).", "",
             "| " + " | ".join(cols) + " |", "|---|" + "--:|" * (len(cols) - 1)]
    for e in entries:
        cells = [e["name"], fmt(e.get("aotc_compile_s"), 2)]
        for p in peers:
            info = e.get("peers", {}).get(p)
            if info is None:
                cells.append("error" if p in e.get("peer_errors", {}) else "—")
            else:
                cells.append(fmt(info["compile_s"], 2) + (" (cached)" if info.get("cached") else ""))
        lines.append("| " + " | ".join(cells) + " |")
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


def source_revision(root: Path) -> str:
    """The checkout's commit, and whether src/ differs from it (read-only git calls)."""
    def git(*cmd):
        return subprocess.run(["git", "--no-optional-locks", *cmd], cwd=root,
                              capture_output=True, text=True)
    head = git("rev-parse", "--short", "HEAD")
    if head.returncode != 0:
        return "unknown (not a git checkout)"
    dirty = git("diff", "--quiet", "HEAD", "--", "src").returncode != 0
    return head.stdout.strip() + (" with uncommitted changes under src/" if dirty else "")


def versions(peers: list[str]) -> str:
    parts = [f"torch {torch.__version__}"]
    for p, module in (("ort", "onnxruntime"), ("openvino", "openvino"),
                      ("executorch", "executorch")):
        if p in peers:
            try:
                parts.append(f"{module} {__import__(module).__version__}")
            except ImportError:
                pass
    return ", ".join(parts)


def wait_policy(args) -> str:
    if args.gomp_spincount is not None:
        return f"GOMP_SPINCOUNT={args.gomp_spincount} in the workers' environment."
    chosen = [f"{v}={os.environ[v]}" for v in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
              if v in os.environ]
    if chosen:
        return f"the environment sets {', '.join(chosen)}."
    return "its wait policy is libgomp's default (GOMP_SPINCOUNT 300000)."


def header(args, meta: dict, peers: list[str]) -> list[str]:
    import aotc

    cpu = cpu_facts()
    peer_names = ", ".join(LABEL[p] for p in peers) or "none"
    return [
        "# aotc benchmark results", "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']} (total wall time {meta['wall_s']:.0f} s)",
        f"- machine: {cpu['cores']} logical cores, {cpu['model']}; "
        f"flags: {', '.join(cpu['flags']) or 'n/a'}; {platform.system()} {platform.release()}",
        f"- load average (1 min) at start / end: {meta['load'][0]:.2f} / {meta['load'][1]:.2f}",
        f"- {versions(peers)}, aotc {aotc.__version__} at {meta['revision']}, "
        f"Python {platform.python_version()}",
        f"- peers: {peer_names}. Each (thread count, peer) pair is timed in its own fresh "
        "process that holds eager, aotc and that one peer, so no other runtime's thread pool "
        "is alive while they run; aotc/eager is the median of the per-process ratios, a peer's "
        "ratios come from its own process. Thread counts: OMP_NUM_THREADS=n and "
        "torch.set_num_threads(n); aotc `load_package(..., num_threads=n)`; AOTI follows "
        "OMP_NUM_THREADS; ORT intra_op_num_threads=n, inter_op_num_threads=1, sequential; "
        "OpenVINO INFERENCE_NUM_THREADS=n, one stream, INFERENCE_PRECISION_HINT=f32. "
        "A worker imports torch first, so eager, AOTI and aotc share torch's libgomp; "
        + wait_policy(args),
        f"- timing: {args.reps} interleaved reps per implementation; each rep is one batch of "
        f"~{args.batch_ms:.0f} ms of back-to-back calls, the starting implementation rotating; "
        "cells are medians of the per-call time over reps. 'spread %': the largest "
        "interquartile range relative to its median, the implementation it belongs to, and "
        "aotc's own when another's is larger; 'other load %': CPU the rest of the "
        "machine used while the model was timed (the machine is shared); both the worst over "
        f"the model's processes. Before each model a worker waits up to {args.wait_idle:.0f} s "
        f"for an idle machine; an attempt whose spread exceeds {args.noise_pct:.0f}% is retried "
        f"up to {args.retries} time(s), keeping the quietest ('try k').",
        "- correctness: before timing, aotc is checked against eager with "
        "torch.testing.assert_close (default float32 tolerances), each peer with rtol = atol = "
        "1e-4; a mismatch is reported in the flags column and that runtime is not timed.",
        "- compile warm-up (one-time costs paid by a tiny model first): aotc "
        f"{meta['aotc_warmup_s']:.1f} s; AOTI "
        + (f"{meta['aoti_warmup_s']:.1f} s" if "aoti_warmup_s" in meta else "not needed") + ".",
        "- eager: the nn.Module under torch.inference_mode. Ratios: lower is better for aotc. "
        f"Flags: aotc slower than {EAGER_FLAG}× eager, or than {PEER_FLAG}× the fastest peer "
        "(whose aotc/peer cell is bold).",
        "",
    ]


def kept_notes(path: Path) -> list[str]:
    if path.exists():
        text = path.read_text()
        if NOTES_MARKER in text:
            return [NOTES_MARKER + text.split(NOTES_MARKER, 1)[1].rstrip("\n")]
    return [NOTES_MARKER, "", "## Notes", "", "(none yet)"]


def render(args, meta, benches, entries, runs, out: Path | None) -> str:
    """runs: {threads: {peer or 'none': worker result}}."""
    peers = meta["peers"]
    lines = header(args, meta, peers)
    lines += ["## Models", ""] + [f"- `{b.name}`: {b.description}" for b in benches] + [""]
    lines += ["## Results", ""]
    summary, rows_by_threads = {}, {}
    for threads, by_peer in runs.items():
        rows = []
        for e in entries:
            per = {p: next((r for r in res["results"] if r["name"] == e["name"]), None)
                   for p, res in by_peer.items()}
            rows.append(combine(e["name"], per, peers))
        table, summary[threads] = thread_table(threads, rows, peers)
        rows_by_threads[threads] = rows
        lines += table
    lines += acceptance(summary, rows_by_threads)
    if meta.get("gemm"):
        lines = lines[:-1] + gemm_section(meta["gemm"])
    lines += compile_table(entries, peers)
    failed = [e for e in entries if "aotc_error" in e or e.get("peer_errors")]
    if failed:
        lines += ["## Compile failures", ""]
        for e in failed:
            if "aotc_error" in e:
                lines.append(f"- `{e['name']}` aotc: {e['aotc_error']}")
            for p, why in e.get("peer_errors", {}).items():
                lines.append(f"- `{e['name']}` {LABEL[p]}: {why[:300]}")
        lines.append("")
    if out is not None:
        lines += kept_notes(out)
    return "\n".join(lines) + "\n"


def write_section(out: Path, section: str, begin: str, end: str) -> None:
    """Replace a runner's section (between its `begin` and `end` markers) in `out`; in a
    RESULTS.md without one, add it at the top of the kept notes (or at its end); any other
    file is written whole."""
    text = out.read_text() if out.exists() else ""
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + section.rstrip("\n") + rest.split(end, 1)[1]
    elif NOTES_MARKER in text and "\n## Notes\n" in text.split(NOTES_MARKER, 1)[1]:
        head, notes = text.split(NOTES_MARKER, 1)
        before, after = notes.split("\n## Notes\n", 1)
        text = head + NOTES_MARKER + before + "\n## Notes\n\n" + section + after
    elif out.name == "RESULTS.md":
        text = text.rstrip("\n") + "\n\n" + section
    else:
        text = section
    out.write_text(text)
