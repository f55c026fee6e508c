"""FX graphs for the debugging tools: each node's eager value, a subgraph of chosen nodes
whose outside values become inputs, and checking a graph through aotc against eager."""
from __future__ import annotations

import os
import tempfile
import traceback
from dataclasses import dataclass

import torch
import torch.fx

from ..errors import AotcError


def tensor_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The call nodes whose value is one tensor, in graph order."""
    return [n for n in gm.graph.nodes if n.op == "call_function"
            and isinstance(n.meta.get("val"), torch.Tensor)]


def eager_values(gm: torch.fx.GraphModule, flat_inputs) -> dict[str, object]:
    """Every node's value when `gm` runs eagerly on `flat_inputs`, by node name."""
    values: dict[str, object] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            values[n.name] = out = super().run_node(n)
            return out

    with torch.no_grad():
        Recorder(gm).run(*flat_inputs)
    return values


def flat_module(gm: torch.fx.GraphModule, outputs: list[torch.fx.Node]) -> torch.fx.GraphModule:
    """A copy of `gm` taking its placeholders positionally and returning `outputs` as a tuple."""
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for n in gm.graph.nodes:
        if n.op == "output":
            continue
        env[n] = graph.node_copy(n, lambda a: env[a])
    graph.output(tuple(env[n] for n in outputs))
    return torch.fx.GraphModule(gm, graph)


def subgraph(gm: torch.fx.GraphModule, keep: list[torch.fx.Node], values: dict[str, object]):
    """(module, inputs): the nodes `keep` alone; every value they read from outside becomes an
    input holding its eager value (scalars are written in), and every tensor used outside
    (or returned) becomes an output. None when a value read from outside is neither a tensor
    nor a scalar (a tuple half of a multi-output op), or nothing tensor-valued is left."""
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, object] = {}
    inputs = []
    kept = set(keep)
    for n in keep:
        for a in n.all_input_nodes:
            if a in kept or a in env:
                continue
            v = values.get(a.name)
            if isinstance(v, torch.Tensor):
                env[a] = graph.placeholder(a.name)
                inputs.append(v)
            elif isinstance(v, (int, float, bool)):
                env[a] = v
            else:
                return None
        env[n] = graph.node_copy(n, lambda a: env[a])
    outs = [env[n] for n in keep if isinstance(values.get(n.name), torch.Tensor)
            and any(u not in kept for u in n.users)]
    if not outs:
        return None
    graph.output(tuple(outs))
    return torch.fx.GraphModule(torch.nn.Module(), graph), inputs


@dataclass(frozen=True)
class Failure:
    """How aotc failed on a graph: at compile time, at run time, or by a wrong value."""

    kind: str  # "compile" | "run" | "mismatch"
    error: str  # the exception's type, or the output that differs
    detail: str

    def same(self, other: Failure | None) -> bool:
        return other is not None and (self.kind, self.error) == (other.kind, other.error)

    def __str__(self) -> str:
        return f"{self.kind} failure ({self.error}): {self.detail}"


def _error_name(e: BaseException) -> str:
    op = getattr(e, "op", None)
    return f"{type(e).__name__}({op})" if op else type(e).__name__


def check(module: torch.nn.Module, inputs: list, options: dict | None = None,
          rtol: float | None = None, atol: float | None = None) -> Failure | None:
    """Export `module` on `inputs`, compile and run it with aotc, compare with eager.
    None when aotc agrees; raises ValueError when eager or export itself fails (the graph
    is not a valid program, so it says nothing about aotc)."""
    import aotc

    try:
        with torch.no_grad():
            expected = module(*inputs)
            ep = torch.export.export(module, tuple(inputs), strict=False)
    except Exception as e:
        raise ValueError(f"not a valid program: {type(e).__name__}: {e}") from None
    with tempfile.TemporaryDirectory(prefix="aotc-check-") as tmp:
        try:
            path = aotc.compile_and_package(ep, os.path.join(tmp, "m.pt2"), options=options)
        except Exception as e:  # a planted or real compiler bug may raise anything
            return Failure("compile", _error_name(e), _last_line(e))
        try:
            got = aotc.load_package(path)(*inputs)
        except (AotcError, Exception) as e:
            return Failure("run", _error_name(e), _last_line(e))
    expected, got = _as_tuple(expected), _as_tuple(got)
    for k, (want, have) in enumerate(zip(expected, got)):
        try:
            torch.testing.assert_close(have, want, rtol=rtol, atol=atol, equal_nan=True)
        except AssertionError as e:
            return Failure("mismatch", "value", f"output {k}: " + " ".join(str(e).split()))
    return None


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _last_line(e: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(e), e)).strip()
    return text.splitlines()[-1][:500] if text else type(e).__name__
