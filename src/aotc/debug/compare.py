"""`aotc.debug.compare(ep, inputs)`: runs the compiled program and eager PyTorch side by
side and names the first graph node whose value diverges, with the error and its source line.

It compiles a variant of the program that also returns every intermediate tensor, so each
node's compiled value can be set beside eager's, in graph order.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field

import torch

from ..frontend.source import user_source
from .graphs import eager_values, flat_module, tensor_nodes


@dataclass(frozen=True)
class NodeDiff:
    node: str
    target: str
    max_abs: float
    max_rel: float
    ok: bool
    source: str  # the user's line, 'file.py:12 (code)'

    def __str__(self) -> str:
        where = f" at {self.source}" if self.source else ""
        return (f"{self.node} ({self.target}){where}: max abs error {self.max_abs:.3g}, "
                f"max rel error {self.max_rel:.3g}")


@dataclass
class Comparison:
    nodes: list[NodeDiff] = field(default_factory=list)

    @property
    def first_divergence(self) -> NodeDiff | None:
        return next((d for d in self.nodes if not d.ok), None)

    def __str__(self) -> str:
        bad = self.first_divergence
        if bad is None:
            return f"all {len(self.nodes)} intermediate tensors match eager"
        return f"first divergence from eager, node {self.nodes.index(bad) + 1} of " \
               f"{len(self.nodes)}: {bad}"


def _diff(have: torch.Tensor, want: torch.Tensor, rtol: float, atol: float) -> tuple[float, float, bool]:
    if have.shape != want.shape or have.dtype != want.dtype:
        return float("inf"), float("inf"), False
    if want.numel() == 0:
        return 0.0, 0.0, True
    a, b = have.double(), want.double()
    same_nan = torch.isnan(a) == torch.isnan(b)
    a, b = torch.nan_to_num(a, nan=0.0), torch.nan_to_num(b, nan=0.0)
    err = (a - b).abs()
    finite = torch.isfinite(err)
    err = torch.where(finite, err, torch.where(a == b, 0.0, float("inf")))
    rel = err / b.abs().clamp_min(1e-12)
    ok = bool(same_nan.all() and (err <= atol + rtol * b.abs()).all())
    return float(err.max()), float(rel.max()), ok


def compare(ep: torch.export.ExportedProgram, inputs, options: dict | None = None,
            rtol: float = 1e-4, atol: float = 1e-4) -> Comparison:
    """Every intermediate tensor of `ep` on `inputs` (a tuple of positional args), compiled by
    aotc and run eagerly; `.first_divergence` names the first node beyond the tolerance."""
    import aotc

    flat = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    gm = ep.module()
    values = eager_values(gm, flat)
    nodes = tensor_nodes(gm)
    variant = flat_module(gm, nodes)
    with torch.no_grad():
        program = torch.export.export(variant, tuple(flat), strict=False)
    with tempfile.TemporaryDirectory(prefix="aotc-compare-") as tmp:
        path = aotc.compile_and_package(program, os.path.join(tmp, "all.pt2"), options=options)
        got = aotc.load_package(path)(*flat)
    result = Comparison()
    for node, have in zip(nodes, got):
        err, rel, ok = _diff(have, values[node.name], rtol, atol)
        result.nodes.append(NodeDiff(node.name, str(node.target), err, rel, ok,
                                     user_source(node.meta.get("stack_trace"))))
    return result
