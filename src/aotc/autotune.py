"""`max_autotune`: measure the compiled model at compile time and keep the fastest choice.

The candidates are what aotc can vary without touching its kernels: the ISA level of the
generated code and hand-written GEMM (the host target's tune_isas: the host's, and AVX2 on an
AVX-512 host, where wide vectors may lower the clock) and the OpenMP thread count (1, 2, 4,
... up to the cores).
Each candidate runs the export's example inputs; the lowest median latency wins and becomes
the package's ISA and default thread count. Options given explicitly are not varied.
"""
from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Callable

import numpy as np
import torch

from .target import host_target

log = logging.getLogger("aotc.perf")


def example_inputs(ep: torch.export.ExportedProgram, seed: int = 0) -> list:
    """The export's example inputs, else random ones of its shapes (dynamic dims at their
    example sizes)."""
    example = getattr(ep, "example_inputs", None)
    if example is not None and not example[1] and all(
            isinstance(x, torch.Tensor) for x in example[0]):
        return list(example[0])
    rng = np.random.default_rng(seed)
    out = []
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    for spec in ep.graph_signature.input_specs:
        if spec.kind.name != "USER_INPUT":
            continue
        val = placeholders[spec.arg.name].meta["val"]
        shape = [int(s.node.hint) if isinstance(s, torch.SymInt) else int(s) for s in val.shape]
        out.append(torch.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(val.dtype))
    return out


def thread_candidates() -> list[int]:
    cores = os.cpu_count() or 1
    counts, n = [], 1
    while n < cores:
        counts.append(n)
        n *= 2
    return counts + [cores]


def _median_latency(model, inputs: list, budget: float = 0.15) -> float:
    for _ in range(3):
        model(*inputs)
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < budget and len(times) < 200):
        t0 = time.perf_counter()
        model(*inputs)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def autotune(ep, compile_for: Callable[[str], object], isa: str | None,
             num_threads: int | None) -> tuple[object, list[dict]]:
    """(the winning ModelFiles, every measurement). `compile_for(isa)` compiles the program
    for one ISA; `isa`/`num_threads` are fixed when given, else varied."""
    from .package.format import write_package
    from .runtime.loader import load_package

    isas = [isa] if isa else list(host_target().tune_isas)
    threads = [num_threads] if num_threads else thread_candidates()
    inputs = example_inputs(ep)
    results, built = [], {}
    with tempfile.TemporaryDirectory(prefix="aotc-tune-") as tmp:
        for cand_isa in isas:
            files = built[cand_isa] = compile_for(cand_isa)
            path = write_package(os.path.join(tmp, f"{cand_isa}.pt2"), {"model": files})
            for n in threads:
                model = load_package(path, num_threads=n)
                latency = _median_latency(model, inputs)
                results.append({"isa": cand_isa, "num_threads": n, "seconds": round(latency, 7)})
                log.info("autotune: isa %s, %d thread(s): %.1f us", cand_isa, n, latency * 1e6)
                del model
    best = min(results, key=lambda r: r["seconds"])
    files = built[best["isa"]]
    files.metadata["num_threads"] = best["num_threads"]
    files.metadata["autotune"] = {"chosen": best, "measured": results}
    return files, results
