"""`aotc bench --profile`: every kernel of a call timed (the run's own counters, ABI version
7), a table of their shares and rates, and a Chrome-trace JSON that Perfetto opens."""
from __future__ import annotations

import json
from pathlib import Path

from .common import plain

TRACE_MARK = "aotc_profile"  # otherData key of the traces this writes: those it may replace


def trace_path(args) -> Path:
    """Where the trace goes: the path given, or <package>.trace.json in the current folder;
    a file there that is not a trace of ours is never overwritten."""
    from aotc.errors import InputError

    path = Path(args.profile) if args.profile else Path(Path(args.package).stem + ".trace.json")
    if path.exists():
        try:
            ours = TRACE_MARK in json.loads(path.read_text()).get("otherData", {})
        except (OSError, ValueError, AttributeError):
            ours = False
        if not ours:
            raise InputError(f"{path} exists and is not an aotc trace; name another file with "
                             "--profile PATH")
    return path


def cmd_profile(args, out) -> int:
    from rich.table import Table

    import aotc
    from aotc.errors import InputError
    from aotc.runtime.profile import chrome_trace, profile_calls, summarize

    from .run import call_arguments, gather_inputs

    threads = [int(t) for t in str(args.threads).split(",") if t.strip()]
    if len(threads) != 1:
        raise InputError(f"--profile times one thread count, got --threads {args.threads}")
    path = trace_path(args)
    model = aotc.load_package(args.package, args.model, num_threads=threads[0])
    inputs = gather_inputs(model.package_metadata, args)
    call_args, call_kwargs = call_arguments(model.package_metadata, inputs)
    for _ in range(args.warmup):
        model(*call_args, **call_kwargs)
    calls, runs = profile_calls(model, list(call_args), args.iters, call_kwargs)
    steps = model.profiler().steps
    rows = summarize(steps, calls, runs)
    mean_call = sum(e - b for b, e in calls) / max(1, len(calls)) / 1e3
    table = Table(title=f"{args.package}: {len(steps)} kernels, {args.iters} calls of "
                  f"{mean_call:.1f} us mean at {threads[0]} thread(s)", title_justify="left")
    for col, justify in (("kernel", "left"), ("ops", "left"), ("source", "left"),
                         ("us/call", "right"), ("share", "right"), ("GFLOP/s", "right"),
                         ("GB/s", "right")):
        table.add_column(col, justify=justify, overflow="fold")
    for r in rows:
        table.add_row(*plain(r.step.kernel, _short(_node_names(r.step.ops)), _short(r.step.source),
                             f"{r.mean_us:.2f}", f"{100 * r.share:.1f}%",
                             "" if r.gflops is None else f"{r.gflops:.1f}", f"{r.gbytes:.2f}"))
    outside = 1 - sum(r.share for r in rows)
    table.add_row(*plain("(outside kernels)", "input checks, binding, the call itself", "",
                         f"{outside * mean_call:.2f}", f"{100 * outside:.1f}%", "", ""))
    out.print(table)
    path.write_text(json.dumps(chrome_trace(model.name, steps, calls, runs)))
    out.print(f"trace: {path} (open it in Perfetto)")
    return 0


def _node_names(ops: str) -> str:
    """"conv2d (aten.conv2d.default), relu (aten.relu.default)" -> "conv2d, relu" (the trace
    keeps the ATen targets)."""
    return ", ".join(part.split(" (")[0] for part in ops.split(", ") if not part.startswith("aten."))


def _short(text: str, limit: int = 72) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."
