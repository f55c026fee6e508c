"""The minifier: from a program and inputs that aotc fails to compile, crashes on or gets
wrong, the smallest failing subgraph (delta debugging over nodes, then halving input sizes),
written as a standalone repro script that needs only torch and aotc.

A candidate subgraph takes the eager values of whatever it reads from outside as inputs and
returns what it produces for outside; it still fails when aotc fails the same way on it.
"""
from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from ..errors import CompileError
from .graphs import Failure, check, eager_values, subgraph

log = logging.getLogger("aotc.minify")


@dataclass
class MinifyResult:
    failure: Failure
    nodes: list[str]  # the minimal failing subgraph's nodes
    input_shapes: list[tuple]
    repro: Path
    checks: int  # candidates compiled on the way


def ddmin(items: list, fails: Callable[[list], bool]) -> list:
    """Zeller's delta debugging: a 1-minimal sublist of `items` for which `fails` holds."""
    n = 2
    while len(items) >= 2:
        size = -(-len(items) // n)
        chunks = [items[k:k + size] for k in range(0, len(items), size)]
        for chunk in chunks:
            if fails(chunk):
                items, n = chunk, 2
                break
        else:
            for chunk in chunks:
                rest = [x for x in items if x not in chunk]
                if len(chunks) > 2 and fails(rest):
                    items, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(items):
                    break
                n = min(len(items), 2 * n)
    return items


class _Search:
    def __init__(self, gm, values, options, rtol, atol):
        self.gm, self.values, self.options = gm, values, options
        self.rtol, self.atol = rtol, atol
        self.memo: dict[frozenset, Failure | None] = {}
        self.checks = 0

    def run(self, module, inputs) -> Failure | None:
        self.checks += 1
        try:
            return check(module, inputs, self.options, self.rtol, self.atol)
        except ValueError:  # not a valid program: says nothing about aotc
            return None

    def nodes_fail(self, keep: list, target: Failure) -> bool:
        key = frozenset(n.name for n in keep)
        if key not in self.memo:
            built = subgraph(self.gm, keep, self.values)
            self.memo[key] = None if built is None else self.run(*built)
            log.info("%d nodes: %s", len(keep), self.memo[key] or "passes")
        return target.same(self.memo[key])


def _shrink_inputs(search: _Search, module, inputs: list, target: Failure) -> list:
    """Halve each input dim while the failure stays (shapes written into the graph make
    most such attempts invalid programs, which are skipped)."""
    inputs = list(inputs)
    progress = True
    while progress:
        progress = False
        for k, x in enumerate(inputs):
            for d in range(x.dim()):
                if x.shape[d] <= 1:
                    continue
                trial = inputs[:k] + [x.narrow(d, 0, x.shape[d] // 2).contiguous()] + inputs[k + 1:]
                if target.same(search.run(module, trial)):
                    inputs, x, progress = trial, trial[k], True
    return inputs


def minify(ep: torch.export.ExportedProgram, inputs, repro_path, options: dict | None = None,
           rtol: float | None = None, atol: float | None = None) -> MinifyResult:
    """Shrink `ep` on `inputs` to a minimal subgraph that fails the same way, and write a
    repro script to `repro_path`. CompileError if aotc does not fail on the program."""
    flat = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    gm = ep.module()
    values = eager_values(gm, flat)
    search = _Search(gm, values, options, rtol, atol)
    nodes = [n for n in gm.graph.nodes if n.op == "call_function"]
    built = subgraph(gm, nodes, values)
    target = search.run(*built) if built is not None else None
    if target is None:
        raise CompileError("minify: aotc compiles and runs this program on these inputs and "
                           "matches eager; there is no failure to minimize")
    log.info("failure to keep: %s", target)
    search.memo[frozenset(n.name for n in nodes)] = target
    keep = ddmin(nodes, lambda s: search.nodes_fail(s, target))
    module, sub_inputs = subgraph(gm, keep, values)
    sub_inputs = _shrink_inputs(search, module, sub_inputs, target)
    failure = search.run(module, sub_inputs) or target
    path = Path(repro_path)
    path.write_text(repro_script(module, sub_inputs, failure, options, rtol, atol))
    return MinifyResult(failure, [n.name for n in keep], [tuple(x.shape) for x in sub_inputs],
                        path, search.checks)


def _tensor_literal(t: torch.Tensor) -> str:
    t = t.detach().contiguous()
    if t.numel() == 0:
        return f"torch.empty({list(t.shape)}, dtype={t.dtype})"
    data = base64.b64encode(t.view(torch.uint8).numpy().tobytes()).decode()
    return f"_tensor({data!r}, {t.dtype}, {list(t.shape)})"


def repro_script(module: torch.fx.GraphModule, inputs: list, failure: Failure,
                 options: dict | None, rtol, atol) -> str:
    code = module.code.strip("\n")
    body = "\n".join("    " + line.rstrip() if line.strip() else ""
                     for line in code.splitlines()).rstrip()
    tensors = ",\n    ".join(_tensor_literal(x) for x in inputs)
    return f'''"""aotc minifier repro: {failure.kind} failure ({failure.error}).

{failure.detail[:300]}

Runs with torch and aotc only; exits 1 while aotc still fails, 0 once it is fixed.
"""
import base64
import sys

import torch
from torch import device  # noqa: F401  (the graph may name devices)

import aotc

inf, nan = float("inf"), float("nan")


class Repro(torch.nn.Module):
{body}


def _tensor(data, dtype, shape):
    raw = bytearray(base64.b64decode(data))
    return torch.frombuffer(raw, dtype=torch.uint8).view(dtype).reshape(shape).clone()


INPUTS = [
    {tensors},
]
OPTIONS = {options or {}!r}


def main() -> int:
    module = Repro().eval()
    with torch.no_grad():
        expected = module(*INPUTS)
        ep = torch.export.export(module, tuple(INPUTS), strict=False)
    try:
        path = aotc.compile_and_package(ep, options=OPTIONS)
        got = aotc.load_package(path)(*INPUTS)
    except Exception as e:
        print(f"aotc fails: {{type(e).__name__}}: {{e}}")
        return 1
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    for k, (want, have) in enumerate(zip(expected, got)):
        try:
            torch.testing.assert_close(have, want, rtol={rtol!r}, atol={atol!r}, equal_nan=True)
        except AssertionError as e:
            print(f"aotc's output {{k}} differs from eager: {{e}}")
            return 1
    print("aotc matches eager: the failure is fixed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''
