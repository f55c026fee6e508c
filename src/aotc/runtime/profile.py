"""The run timed step by step (ABI version 7): a model library's per-kernel counters, read
through ctypes. `CompiledModel.profiler()` gives one; `aotc bench --profile` drives it."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

from .abi import check


class _Step(ctypes.Structure):
    _fields_ = [("kernel", ctypes.c_char_p), ("ops", ctypes.c_char_p), ("source", ctypes.c_char_p)]


class _Count(ctypes.Structure):
    _fields_ = [("runs", ctypes.c_uint64), ("total_ns", ctypes.c_uint64),
                ("last_begin_ns", ctypes.c_uint64), ("last_ns", ctypes.c_uint64),
                ("last_flops", ctypes.c_double), ("last_bytes", ctypes.c_double)]


@dataclass(frozen=True)
class Step:
    """One step of the run: the kernel's name, the ATen nodes it computes, their source."""
    index: int
    kernel: str
    ops: str
    source: str


@dataclass(frozen=True)
class StepCount:
    """What profiling counted of a step: its runs and their total time, and its latest run's
    start (time.monotonic_ns's clock), duration, arithmetic and bytes."""
    runs: int
    total_ns: int
    last_begin_ns: int
    last_ns: int
    last_flops: float
    last_bytes: float


class Profiler:
    """The per-kernel counters of one model library (shared by its model objects and by
    every load of the same package in this process)."""

    def __init__(self, lib: ctypes.CDLL):
        self._lib = lib
        lib.aotc_describe_profile.argtypes = [ctypes.POINTER(ctypes.POINTER(_Step)),
                                              ctypes.POINTER(ctypes.c_int64)]
        lib.aotc_profile_enable.argtypes = [ctypes.c_int32]
        lib.aotc_profile_read.argtypes = [ctypes.POINTER(_Count), ctypes.c_int64, ctypes.c_int32]
        for fn in (lib.aotc_describe_profile, lib.aotc_profile_enable, lib.aotc_profile_read):
            fn.restype = ctypes.c_int
        table, n = ctypes.POINTER(_Step)(), ctypes.c_int64()
        check(lib, lib.aotc_describe_profile(ctypes.byref(table), ctypes.byref(n)))
        self.steps = [Step(k, table[k].kernel.decode(), table[k].ops.decode(),
                           table[k].source.decode()) for k in range(n.value)]
        self._counts = (_Count * max(1, len(self.steps)))()

    def enable(self, on: bool = True) -> bool:
        """Switch the timing on or off; whether it was on."""
        return bool(self._lib.aotc_profile_enable(1 if on else 0))

    def read(self, reset: bool = False) -> list[StepCount]:
        """Each step's counts, in run order; zeroed after reading with `reset`."""
        check(self._lib, self._lib.aotc_profile_read(self._counts, len(self.steps), int(reset)))
        return [StepCount(c.runs, c.total_ns, c.last_begin_ns, c.last_ns, c.last_flops,
                          c.last_bytes) for c in self._counts[:len(self.steps)]]


@dataclass(frozen=True)
class StepRun:
    """One step's part of one call: the call's number, the step, and its latest run in that
    call (with how many times it ran there: more than once inside a loop)."""
    call: int
    step: int
    begin_ns: int
    ns: int
    flops: float
    bytes: float
    runs: int


def profile_calls(model, inputs: list, iters: int, kwargs: dict | None = None
                  ) -> tuple[list[tuple[int, int]], list[StepRun]]:
    """Call `model(*inputs, **kwargs)` `iters` times with its profiler on; each call's (start, end) on
    time.monotonic_ns's clock, and every step's run in every call (the counts read after
    each call). The profiler's counts are zeroed before and left off after."""
    import time

    prof = model.profiler()
    prof.read(reset=True)
    was_on = prof.enable(True)
    calls, runs = [], []
    before = [0] * len(prof.steps)
    try:
        for i in range(iters):
            t0 = time.monotonic_ns()
            model(*inputs, **(kwargs or {}))
            calls.append((t0, time.monotonic_ns()))
            counts = prof.read()
            for k, c in enumerate(counts):
                if c.runs > before[k]:
                    runs.append(StepRun(i, k, c.last_begin_ns, c.last_ns, c.last_flops,
                                        c.last_bytes, c.runs - before[k]))
            before = [c.runs for c in counts]
    finally:
        prof.enable(was_on)
    return calls, runs


@dataclass(frozen=True)
class StepSummary:
    step: Step
    runs_per_call: float
    mean_us: float  # per call
    share: float  # of the calls' time
    gflops: float | None  # None: a step without arithmetic
    gbytes: float


def summarize(steps: list[Step], calls: list[tuple[int, int]], runs: list[StepRun]
              ) -> list[StepSummary]:
    """Each step's time per call, share of the calls' time and rates, largest share first.
    A step that ran several times in a call is timed by its latest run, times its runs."""
    total_call = sum(e - b for b, e in calls) or 1
    n = max(1, len(calls))
    out = []
    for s in steps:
        mine = [r for r in runs if r.step == s.index]
        ns = sum(r.ns * r.runs for r in mine)
        flops = sum(r.flops * r.runs for r in mine)
        moved = sum(r.bytes * r.runs for r in mine)
        out.append(StepSummary(s, sum(r.runs for r in mine) / n, ns / n / 1e3, ns / total_call,
                               flops / ns if flops and ns else None, moved / ns if ns else 0.0))
    return sorted(out, key=lambda x: -x.share)


def chrome_trace(name: str, steps: list[Step], calls: list[tuple[int, int]],
                 runs: list[StepRun]) -> dict:
    """The calls and their kernels as Chrome trace events (Perfetto and chrome://tracing
    open it): one complete event per call, and inside it one per step that ran."""
    events: list[dict] = [{"name": "process_name", "ph": "M", "pid": 1,
                           "args": {"name": f"aotc {name}"}}]
    for i, (b, e) in enumerate(calls):
        events.append({"name": "call", "cat": "call", "ph": "X", "pid": 1, "tid": 1,
                       "ts": b / 1e3, "dur": (e - b) / 1e3, "args": {"call": i}})
    for r in runs:
        s = steps[r.step]
        args: dict = {"step": r.step, "ops": s.ops, "source": s.source, "runs": r.runs,
                      "bytes": r.bytes}
        if r.flops:
            args["flops"] = r.flops
        events.append({"name": s.kernel, "cat": "kernel", "ph": "X", "pid": 1, "tid": 1,
                       "ts": r.begin_ns / 1e3, "dur": r.ns / 1e3, "args": args})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"aotc_profile": name}}
