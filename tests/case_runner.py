"""Run many calls of compiled packages in numpy-only child processes and compare each with
ep.module(): a call that crashes the child is reported with its exit code and the case it
was running, and the remaining calls go on in a fresh child.

A case is (label, package path, model name, args pytree of torch values). The child loads
each package once, makes the call, and writes the outputs (a pytree of numpy arrays and
Python scalars) or the exception it raised. `check` holds aotc to ep.module(): same pytree,
dtypes, shapes and values when eager runs; an `aotc.InputError` when eager raises."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy_only import BLOCK_TORCH

CHILD = BLOCK_TORCH + textwrap.dedent("""
    import os
    import numpy as np
    from aotc.errors import AotcError, InputError
    from aotc.runtime import load_package
    folder = sys.argv[1]
    cases = json.loads(open(folder + "/cases.json").read())
    start = int(sys.argv[2])
    models = {}

    def unpack(spec, arrays):
        kind = spec["kind"]
        if kind == "array":
            return arrays[spec["key"]]
        if kind in ("tuple", "list"):
            items = [unpack(c, arrays) for c in spec["items"]]
            return tuple(items) if kind == "tuple" else items
        if kind == "dict":
            return {k: unpack(c, arrays) for k, c in zip(spec["keys"], spec["items"])}
        return spec["value"]

    def pack(value, arrays):
        if isinstance(value, np.ndarray) or isinstance(value, np.generic):
            key = f"o{len(arrays)}"
            arrays[key] = np.asarray(value)
            return {"kind": "array", "key": key}
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return {"kind": "tuple", "items": [pack(v, arrays) for v in value],
                    "name": type(value).__name__}
        if isinstance(value, (tuple, list)):
            return {"kind": type(value).__name__, "items": [pack(v, arrays) for v in value]}
        if isinstance(value, dict):
            return {"kind": "dict", "keys": list(value),
                    "items": [pack(v, arrays) for v in value.values()]}
        if value is None or isinstance(value, (bool, int, float)):
            return {"kind": "scalar", "value": value, "type": type(value).__name__}
        raise TypeError(f"an output of type {type(value)}")

    for i in range(start, len(cases)):
        case = cases[i]
        key = (case["package"], case["model"])
        if key not in models:
            models[key] = load_package(case["package"], case["model"])
        with np.load(f"{folder}/in_{i}.npz") as z:
            arrays = {k: z[k] for k in z.files}
        args = unpack(case["args"], arrays)
        try:
            out = models[key](*args)
            outs = {}
            result = {"out": pack(out, outs)}
            np.savez(f"{folder}/out_{i}.npz", **outs)
        except Exception as e:  # what the call raised is the result
            result = {"error": type(e).__name__, "message": str(e)[:2000],
                      "input_error": isinstance(e, InputError),
                      "aotc_error": isinstance(e, AotcError)}
        result["torch_loaded"] = "torch" in sys.modules
        with open(f"{folder}/res_{i}.json.tmp", "w") as f:
            json.dump(result, f)
        os.replace(f"{folder}/res_{i}.json.tmp", f"{folder}/res_{i}.json")
""")


@dataclass
class Case:
    label: str
    package: str
    model: str | None
    args: tuple


def _pack_inputs(value, arrays: dict) -> dict:
    import torch

    if isinstance(value, torch.Tensor):
        key = f"a{len(arrays)}"
        t = value.detach().contiguous()
        # numpy has no bfloat16: the runtime takes its raw bits as uint16
        arrays[key] = (t.view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16
                       else t.numpy().copy())
        return {"kind": "array", "key": key}
    if isinstance(value, (tuple, list)):
        return {"kind": type(value).__name__, "items": [_pack_inputs(v, arrays) for v in value]}
    if isinstance(value, dict):
        return {"kind": "dict", "keys": list(value),
                "items": [_pack_inputs(v, arrays) for v in value.values()]}
    return {"kind": "scalar", "value": value}


def run_cases(cases: list[Case], folder: Path, timeout: float = 600) -> list[dict]:
    """One result per case: {"out": tree, "arrays": {...}} or {"error": ...} or
    {"crash": exit code, "stderr": tail}. A child that dies or hangs costs that case alone."""
    folder.mkdir(parents=True, exist_ok=True)
    specs = []
    for i, case in enumerate(cases):
        arrays: dict = {}
        specs.append(_pack_inputs(tuple(case.args), arrays))
        np.savez(folder / f"in_{i}.npz", **arrays)
    (folder / "cases.json").write_text(json.dumps(
        [{"package": str(c.package), "model": c.model, "args": s} for c, s in zip(cases, specs)]))
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
    results: list[dict] = []
    while len(results) < len(cases):
        start = len(results)
        try:
            proc = subprocess.run([sys.executable, "-c", CHILD, str(folder), str(start)],
                                  capture_output=True, text=True, timeout=timeout, env=env)
            rc, stderr = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired as e:
            rc, stderr = "timeout", (e.stderr or b"").decode(errors="replace")
        for i in range(start, len(cases)):
            res = folder / f"res_{i}.json"
            if not res.exists():
                break
            r = json.loads(res.read_text())
            if "out" in r:
                with np.load(folder / f"out_{i}.npz") as z:
                    r["arrays"] = {k: z[k] for k in z.files}
            results.append(r)
        if len(results) < len(cases):  # the child stopped inside case len(results)
            results.append({"crash": rc, "stderr": stderr[-3000:]})
    return results


def _to_torch(spec: dict, arrays: dict, like) -> Any:
    import torch

    kind = spec["kind"]
    if kind == "array":
        a = arrays[spec["key"]]
        if isinstance(like, torch.Tensor) and like.dtype == torch.bfloat16 and a.dtype == np.uint16:
            return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
        return torch.from_numpy(np.array(a))
    if kind in ("tuple", "list"):
        likes = list(like) if isinstance(like, (tuple, list)) else [None] * len(spec["items"])
        likes += [None] * (len(spec["items"]) - len(likes))
        items = [_to_torch(c, arrays, lk) for c, lk in zip(spec["items"], likes)]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        likes = like if isinstance(like, dict) else {}
        return {k: _to_torch(c, arrays, likes.get(k)) for k, c in zip(spec["keys"], spec["items"])}
    return spec["value"]


def _structure(value) -> Any:
    """The pytree's containers (list, tuple, a named tuple's type name, dict keys, None) and
    its leaves' kinds."""
    import torch

    if isinstance(value, torch.Tensor):
        return "tensor"
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, [_structure(v) for v in value])
    if isinstance(value, dict):
        return ("dict", {k: _structure(v) for k, v in value.items()})
    return type(value).__name__


def _spec_structure(spec: dict) -> Any:
    """_structure of what the child returned, from its description."""
    kind = spec["kind"]
    if kind == "array":
        return "tensor"
    if kind in ("tuple", "list"):
        return (spec.get("name", kind), [_spec_structure(c) for c in spec["items"]])
    if kind == "dict":
        return ("dict", {k: _spec_structure(c) for k, c in zip(spec["keys"], spec["items"])})
    return spec["type"]


def check(result: dict, expected, eager_error: BaseException | None, rtol=None, atol=None,
          refusal: str = "input_error"):
    """None when aotc's result agrees with eager's, else what differs. Where eager raised,
    aotc must raise an error of kind `refusal`: "input_error" (an aotc.InputError) or
    "aotc_error" (any aotc error)."""
    import torch

    if "crash" in result:
        return f"the numpy-only child died (exit code {result['crash']}): {result['stderr']}"
    if result.get("torch_loaded"):
        return "torch was imported in the numpy-only child"
    if eager_error is not None:
        if "error" in result and result[refusal]:
            return None
        got = (f"{result['error']}: {result['message']}" if "error" in result
               else "aotc returned outputs")
        return (f"ep.module() raised {type(eager_error).__name__}: {str(eager_error)[:300]}; "
                f"aotc should raise {'InputError' if refusal == 'input_error' else 'an aotc error'}, "
                f"got {got[:600]}")
    if "error" in result:
        return f"ep.module() ran; aotc raised {result['error']}: {result['message'][:800]}"
    actual = _to_torch(result["out"], result["arrays"], expected)
    if _spec_structure(result["out"]) != _structure(expected):
        return f"pytree differs: aotc {_spec_structure(result['out'])}, eager {_structure(expected)}"
    try:
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    except AssertionError as e:
        return f"outputs differ: {str(e)[:800]}"
    return None
