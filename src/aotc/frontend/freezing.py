"""Freezing: subgraphs that read only weights (parameters, buffers, lifted constants) are
evaluated once at compile time and become new constants (`freezing=True`, the default).

A tensor the program creates from constants alone (`x.new_zeros(16, 16)`: x gives only
its dtype) and then writes into in place (`labels[a:b, c:d] = k`, as window attention
builds its shift mask) folds too, when every reader the program keeps reads it before the
writes. Only the frontier of such a subgraph is stored; a subgraph that only moves a weight (views
the GEMM reads through strides anyway, same-dtype copies) is left alone, so its weight stays
swappable. The weights a folded constant came from are recorded: swapping them later would
not reach the folded value, so the runtime refuses it. The same plan runs over each
torch.cond branch and while_loop function (graphs.py), over the weights bound to it.
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


# creation ops whose tensor arguments give only dtype and device (and, for *_like, a shape
# that is static here): their value depends on no tensor's data
_CREATIONS = ("aten::new_zeros", "aten::new_ones", "aten::new_full", "aten::zeros_like",
              "aten::ones_like", "aten::full_like")


def _static(val) -> bool:
    return isinstance(val, torch.Tensor) and all(isinstance(d, int) for d in val.shape)


def _created(node: torch.fx.Node):
    """The value of a creation op with a static shape, evaluated with stand-ins for its
    tensor arguments (whose data it does not read); None for any other node."""
    schema = getattr(node.target, "_schema", None)
    if schema is None or schema.name not in _CREATIONS or not _static(node.meta.get("val")):
        return None
    like = [n.meta.get("val") for n in node.all_input_nodes]
    if not all(isinstance(v, torch.Tensor) for v in like):
        return None
    # new_*: only the dtype counts; *_like: the shape too, static since the result's is
    shape = (lambda v: ()) if schema.name.startswith("aten::new_") else (lambda v: tuple(v.shape))
    stand_in = {n: torch.zeros(shape(v), dtype=v.dtype) for n, v in zip(node.all_input_nodes, like)}
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: stand_in[n])
    return node.target(*args, **kwargs)


def _is_view(node: torch.fx.Node) -> bool:
    schema = getattr(node.target, "_schema", None)
    return bool(schema and schema.returns and schema.returns[0].alias_info is not None
                and not schema.is_mutable)


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
    # (aten.to may alias its input, but not when it converts: then it computes)
    if schema.returns and schema.returns[0].alias_info is not None and schema.name != "aten::to":
        return True
    if schema.name in _COPIES:
        src = node.args[0] if node.args else None
        val, src_val = node.meta.get("val"), getattr(src, "meta", {}).get("val")
        return isinstance(src_val, torch.Tensor) and val.dtype == src_val.dtype
    return False


def plan_folding(ep: torch.export.ExportedProgram) -> tuple[dict, set]:
    """({frontier node: Folded}, {every node that folding removes from the program})."""
    return plan_graph_folding(ep.graph, weight_placeholders(ep))


def weight_placeholders(ep: torch.export.ExportedProgram) -> dict:
    """{placeholder: (value, (its name,))} for the program's weights: parameters, buffers
    the program does not update, lifted constants."""
    specs = {s.arg.name: s for s in ep.graph_signature.input_specs}
    # a buffer the program updates is state, different on every call: never a constant
    mutated = {s.target for s in ep.graph_signature.output_specs
               if s.kind.name in ("BUFFER_MUTATION", "USER_INPUT_MUTATION")}
    constants = {}
    for node in ep.graph.nodes:
        spec = specs.get(node.name) if node.op == "placeholder" else None
        if spec is None or spec.kind not in _CONSTANT_KINDS or spec.target in mutated:
            continue
        data = ep.state_dict.get(spec.target, ep.constants.get(spec.target))
        if isinstance(data, torch.Tensor) and not _updated_in_place(node):
            constants[node] = (data, frozenset([spec.target]))
    return constants


def _updated_in_place(node: torch.fx.Node) -> bool:
    return any(_mutates_first(u) and u.args and u.args[0] is node for u in node.users)


def plan_graph_folding(graph: torch.fx.Graph, constants: dict,
                       kept: frozenset | set = frozenset()) -> tuple[dict, set]:
    """The same for any graph, a torch.cond branch's or a while_loop body's too, given its
    nodes that hold weights (placeholders, a branch's own tensor constants):
    {node: (value, the weights' names)}. Nodes in `kept` never fold (a template reads the
    weights they read as they are)."""
    # a weight the graph updates in place is no constant either
    constants = {n: c for n, c in constants.items() if not _updated_in_place(n)}
    unsafe: set[torch.fx.Node] = set()  # created tensors whose writes must not fold
    while True:
        folded, removed, bad = _plan(graph, constants, unsafe, kept)
        if not bad:
            return folded, removed
        unsafe |= bad


def _plan(graph: torch.fx.Graph, constants: dict, unsafe: set,
          kept) -> tuple[dict, set, set]:
    values: dict[torch.fx.Node, torch.Tensor] = {}
    sources: dict[torch.fx.Node, frozenset[str]] = {}
    computes: dict[torch.fx.Node, bool] = {}  # whether a non-view op is on the way
    root: dict[torch.fx.Node, torch.fx.Node] = {}  # the created tensor a view reads
    writes: dict[torch.fx.Node, list[torch.fx.Node]] = {}  # created tensor -> its folded writes
    order = {n: k for k, n in enumerate(graph.nodes)}
    for node in graph.nodes:
        if node in constants:
            values[node], sources[node] = constants[node]
            computes[node] = False
        elif node.op == "call_function" and node not in kept:
            created = _created(node)
            if created is not None:
                values[node], sources[node], computes[node] = created, frozenset(), False
                root[node] = node
                continue
            inputs = node.all_input_nodes
            if not inputs or not all(n in values for n in inputs):
                continue
            base = root.get(node.args[0]) if node.args and isinstance(node.args[0], torch.fx.Node) \
                else None
            writes_created = _mutates_first(node) and base is not None and base not in unsafe
            if not (_foldable(node) or writes_created):
                continue
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: values[n])
            with torch.no_grad():
                out = node.target(*args, **kwargs)
            if not isinstance(out, torch.Tensor):
                continue
            values[node] = out
            sources[node] = frozenset().union(*(sources[n] for n in inputs))
            computes[node] = not _moves_only(node) or any(computes[n] for n in inputs)
            if writes_created:
                writes.setdefault(base, []).append(node)
                computes[node] = True
            elif _is_view(node) and base is not None:
                root[node] = base
    interior = {n for n in values if n.op == "call_function" and computes[n]}
    frontier = {n for n in interior if any(u not in interior for u in n.users)}
    removed = {n for n in interior if n not in frontier}
    # a kept reader of a created tensor (or of a view of it) after a folded write would read
    # it unwritten: such a tensor's writes stay in the program
    bad = set()
    for base, ws in writes.items():
        first = min(order[w] for w in ws)
        aliases = [n for n, r in root.items() if r is base]
        for a in aliases:
            for u in a.users:
                if u not in interior and u not in ws and not (u in root and root[u] is base) \
                        and order[u] > first:
                    bad.add(base)
    folded = {n: Folded(values[n].detach().contiguous().clone(), tuple(sorted(sources[n])))
              for n in frontier}
    return folded, removed, bad
