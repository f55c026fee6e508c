"""Freezing: subgraphs that read only weights (parameters, buffers, lifted constants) are
evaluated once at compile time and become new constants (`freezing=True`, the default).

Only the frontier of such a subgraph is stored; a subgraph that only moves a weight (views
the GEMM reads through strides anyway, same-dtype copies) is left alone, so its weight stays
swappable. The weights a folded constant came from are recorded: swapping them later would
not reach the folded value, so the runtime refuses it.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.export.graph_signature import InputKind

_CONSTANT_KINDS = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)


@dataclass(frozen=True)
class Folded:
    value: torch.Tensor
    sources: tuple[str, ...]  # the fully-qualified names of the weights it was computed from


def _foldable(node: torch.fx.Node) -> bool:
    op = node.target
    schema = getattr(op, "_schema", None)
    if schema is None or schema.is_mutable:
        return False
    if torch.Tag.nondeterministic_seeded in getattr(op, "tags", ()):
        return False
    return isinstance(node.meta.get("val"), torch.Tensor)


def _mutates_first(node: torch.fx.Node) -> bool:
    """Whether the op writes into its first argument in place (add_, index_put_, copy_)."""
    schema = getattr(node.target, "_schema", None)
    if schema is None or not schema.arguments:
        return False
    alias = schema.arguments[0].alias_info
    return alias is not None and alias.is_write


_COPIES = ("aten::clone", "aten::_to_copy", "aten::lift_fresh_copy", "aten::detach",
           "aten::alias", "aten::contiguous", "aten::to")


def _moves_only(node: torch.fx.Node) -> bool:
    """A view or a same-dtype copy of its input: folding it computes nothing, costs a second
    copy of the weight and would make the weight unswappable."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return False
    if schema.returns and schema.returns[0].alias_info is not None:
        return True
    if schema.name in _COPIES:
        src = node.args[0] if node.args else None
        val, src_val = node.meta.get("val"), getattr(src, "meta", {}).get("val")
        return isinstance(src_val, torch.Tensor) and val.dtype == src_val.dtype
    return False


def plan_folding(ep: torch.export.ExportedProgram) -> tuple[dict, set]:
    """({frontier node: Folded}, {every node that folding removes from the program})."""
    specs = {s.arg.name: s for s in ep.graph_signature.input_specs}
    # a buffer the program updates is state, different on every call: never a constant
    mutated = {s.target for s in ep.graph_signature.output_specs
               if s.kind.name in ("BUFFER_MUTATION", "USER_INPUT_MUTATION")}
    mutated |= {specs[n.args[0].name].target for n in ep.graph.nodes
                if n.op == "call_function" and _mutates_first(n)
                and isinstance(n.args[0], torch.fx.Node) and n.args[0].name in specs}
    values: dict[torch.fx.Node, torch.Tensor] = {}
    sources: dict[torch.fx.Node, frozenset[str]] = {}
    computes: dict[torch.fx.Node, bool] = {}  # whether a non-view op is on the way
    for node in ep.graph.nodes:
        if node.op == "placeholder":
            spec = specs.get(node.name)
            if spec is None or spec.kind not in _CONSTANT_KINDS or spec.target in mutated:
                continue
            data = ep.state_dict.get(spec.target, ep.constants.get(spec.target))
            if isinstance(data, torch.Tensor):
                values[node], sources[node], computes[node] = data, frozenset([spec.target]), False
        elif node.op == "call_function":
            inputs = node.all_input_nodes
            if not inputs or not _foldable(node) or not all(n in values for n in inputs):
                continue
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: values[n])
            with torch.no_grad():
                out = node.target(*args, **kwargs)
            if not isinstance(out, torch.Tensor):
                continue
            values[node] = out
            sources[node] = frozenset().union(*(sources[n] for n in inputs))
            computes[node] = not _moves_only(node) or any(computes[n] for n in inputs)
    interior = {n for n in values if n.op == "call_function" and computes[n]}
    frontier = {n for n in interior if any(u not in interior for u in n.users)}
    removed = {n for n in interior if n not in frontier}
    folded = {n: Folded(values[n].detach().contiguous().clone(), tuple(sorted(sources[n])))
              for n in frontier}
    return folded, removed
