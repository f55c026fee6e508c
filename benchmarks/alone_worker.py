"""One runtime, alone in this process, timed on the models of a spec written by alone.py.

    python benchmarks/alone_worker.py SPEC.json

The spec names the runtime, the thread count and, per model, its artifact and the .npz file
holding its inputs (in0, in1, ...) and eager's outputs (out0, ...). The process imports only
what that runtime needs: numpy and aotc's own runtime for aotc, numpy and the peer's package
for ONNX Runtime and OpenVINO, torch for eager, AOTInductor and ExecuTorch. Each model is
loaded, checked against eager's outputs, warmed up, then timed in `batches` batches of
calibrated length; the result (median per-call ms, interquartile spread, the largest absolute
difference from the reference) is written to the spec's result path.

Optional per-model keys (int8_peers.py): `tolerance` ({"rtol", "atol"} in place of
TOLERANCE), `builder` ("module:function" returning (module, inputs) for eager, in place of
models.BY_NAME), and eager float32's outputs as fp0, fp1, ... in the .npz when out0, ... are
another reference (a quantized module's): their largest difference is reported too.
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TOLERANCE = {"rtol": 1e-4, "atol": 1e-4}
TORCH_INPUTS = ("eager", "aoti", "executorch")


def flatten(out) -> list:
    if isinstance(out, (list, tuple)):
        return [leaf for item in out for leaf in flatten(item)]
    if isinstance(out, dict):
        return [leaf for item in out.values() for leaf in flatten(item)]
    return [out]


def load(runtime: str, name: str, artifact: str | None, threads: int,
         builder: str | None = None):
    """A callable running the model once on this runtime, returning its outputs flattened.
    `builder` ("module:function", called with the name) builds eager's module and inputs
    where the model is not in models.py."""
    if runtime == "aotc":
        import aotc

        model = aotc.load_package(artifact, num_threads=threads)
        return lambda *inputs: flatten(model(*inputs))
    if runtime in ("ort", "openvino", "openvino_onnx"):
        import peer_runtimes

        loader = peer_runtimes.load_ort if runtime == "ort" else peer_runtimes.load_openvino
        return loader(artifact, threads)
    import torch

    torch.set_num_threads(threads)
    if runtime == "eager":
        if builder:
            import importlib

            module_name, function = builder.split(":")
            module, _ = getattr(importlib.import_module(module_name), function)(name)
        else:
            import models

            module, _ = models.BY_NAME[name].build()

        def run(*inputs):
            with torch.inference_mode():
                return flatten(module(*inputs))
        return run
    if runtime == "aoti":
        model = torch._inductor.aoti_load_package(artifact)
        return lambda *inputs: flatten(model(*inputs))
    if runtime == "executorch":
        import peer_runtimes

        return peer_runtimes.load_executorch(artifact, threads)
    raise SystemExit(f"unknown runtime {runtime!r}")


def as_numpy(x) -> np.ndarray:
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


def per_call_ms(fn, inputs, iters: int) -> float:
    t0 = time.perf_counter()
    for _ in range(iters):
        fn(*inputs)
    return (time.perf_counter() - t0) * 1e3 / iters


def time_model(fn, inputs, batch_ms: float, batches: int) -> dict:
    per_call_ms(fn, inputs, 3)
    probe = min(per_call_ms(fn, inputs, 3) for _ in range(3))
    iters = max(1, min(20000, round(batch_ms / max(probe, 1e-4))))
    samples = [per_call_ms(fn, inputs, iters) for _ in range(batches)]
    q = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    return {"ms": statistics.median(samples), "spread_pct": 100 * (q[2] - q[0]) / q[1],
            "iters": iters}


def max_abs_diff(got: list, expected: list) -> float:
    return max((float(np.max(np.abs(g.astype(np.float64) - e))) if g.size else 0.0
                for g, e in zip(got, expected)), default=0.0)


def main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    runtime, threads = spec["runtime"], spec["threads"]
    results = {}
    for entry in spec["entries"]:
        data = np.load(entry["data"])
        inputs = [data[f"in{i}"] for i in range(entry["n_inputs"])]
        expected = [data[f"out{i}"] for i in range(entry["n_outputs"])]
        fp32 = [data[f"fp{i}"] for i in range(entry["n_outputs"])] if "fp0" in data else None
        checked: dict = {}
        try:
            fn = load(runtime, entry["name"], entry.get("artifact"), threads, entry.get("builder"))
            if runtime in TORCH_INPUTS:
                import torch

                inputs = [torch.from_numpy(x) for x in inputs]
            got = [as_numpy(o) for o in fn(*inputs)]
            if len(got) != len(expected):
                raise AssertionError(f"{len(got)} outputs, eager has {len(expected)}")
            checked["max_abs_err"] = max_abs_diff(got, expected)
            if fp32 is not None:
                checked["max_abs_err_fp32"] = max_abs_diff(got, fp32)
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g, e, **entry.get("tolerance", TOLERANCE))
            results[entry["name"]] = {**time_model(fn, inputs, spec["batch_ms"], spec["batches"]),
                                      **checked}
        except Exception as e:  # report and go on: one failure must not hide the rest
            results[entry["name"]] = {"error": f"{type(e).__name__}: "
                                      + " ".join(str(e).split())[:300], **checked}
    Path(spec["result"]).write_text(json.dumps(results))


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main(sys.argv[1])
