"""One way to lower the nodes of a graph, the exported program's own or a subgraph's (a
torch.cond branch, a torch.while_loop cond or body, nested ones too): whatever works at
the top level works inside control flow.

With freezing, nodes that read only weights fold into constants (freezing.py); in a
subgraph the weights are the placeholders bound to weights (the parameters export passes
in as operands) and the branch's own tensor constants, which are `get_attr`s there where
the top level lifts them into inputs. Chains (passes/chains.py: attention, quantized
products; attention is found in subgraphs too) become one template each; every other
call takes its lowering, or its decomposition (importer.py).
"""
from __future__ import annotations

import operator

import sympy
import torch

from ..errors import CompileError, located
from ..ir.nodes import Buffer, BufferKind, ConstantSpec
from ..lowering import TensorValue, buffer_value
from .complex import add_pairs_buffer, pairs_of
from .freezing import plan_graph_folding
from .source import user_source


def import_graph(imp, graph: torch.fx.Graph, weights: dict) -> None:
    """Lower every node of `graph`, its placeholders already bound in `imp.env`; `weights`:
    {placeholder: (value, the weights' names)} for those bound to weights."""
    weights = dict(weights)
    for node in graph.nodes:
        if node.op == "get_attr":
            value = operator.attrgetter(node.target)(graph.owning_module)
            if isinstance(value, torch.Tensor):  # a branch's own constant
                fqn = f"_{imp.subgraph_names.get(graph.owning_module, 'graph')}.{node.target}"
                imp.env[node] = add_constant(imp, node.name, value, fqn)
                weights[node] = imp.weights[imp.env[node].buffer_name()]
            else:  # a subgraph, imported where its torch.cond or while_loop is
                imp.env[node] = value
                imp.subgraph_names[value] = node.target
    chains = {n: c for n, c in imp.chains.items() if n.graph is graph}
    # a chain that keeps its weights as they are (an integer product reads its int8 weight)
    # has its nodes left out of folding
    kept = {n for c in chains.values() if c.keeps_weights for n in c.inner}
    folded, removed = plan_graph_folding(graph, weights, kept) if imp.freezing else ({}, set())
    # a chain part of which is folded into a constant (its q and k are weights) stays as is
    chains = {n: c for n, c in chains.items() if n not in folded
              and not any(i in folded for i in c.inner)}
    inside = {n for c in chains.values() for n in c.inner}
    for node in graph.nodes:
        if node not in folded and (node in removed or node in inside):
            continue
        with located(str(node.target), user_source(node.meta.get("stack_trace")) or node.name,
                     "importing"):
            _import_node(imp, node, folded, chains)


def _import_node(imp, node: torch.fx.Node, folded: dict, chains: dict) -> None:
    if node in folded:
        f = folded[node]
        imp.env[node] = add_constant(imp, node.name, f.value, f"_folded.{node.name}", f.sources)
    elif node in chains:
        imp.env[node] = chains[node].lower(imp)
    elif node.op == "call_function":
        imp.import_call(node)
    elif node.op not in ("placeholder", "output", "get_attr"):
        raise CompileError(f"unsupported FX node kind {node.op} ({node.name})")


def bound_weights(imp, placeholders, values) -> dict:
    """The placeholders of a subgraph bound to whole weights: a parameter, a lifted or
    folded constant (never a registered buffer the program updates: that is state)."""
    found = {}
    for ph, v in zip(placeholders, values):
        name = v.buffer_name() if isinstance(v, TensorValue) else None
        if name in imp.weights:
            found[ph] = imp.weights[name]
    return found


def add_constant(imp, hint: str, data: torch.Tensor, fqn: str,
                 folded_from: tuple = ()) -> TensorValue:
    """A new constant buffer holding `data` (a folded value computed from the weights
    `folded_from`, a branch's own constant), a weight later subgraphs may fold from too."""
    from .importer import meta_dtype  # importer.py imports this module

    name, k = f"c_{hint}", 1
    while name in imp.program.buffers:
        name, k = f"c_{hint}_{k}", k + 1
    while any(c.fqn == fqn for c in imp.program.constants):
        fqn += "_"
    data = data.detach().contiguous().cpu()
    sizes = tuple(sympy.Integer(s) for s in data.shape)
    if data.dtype.is_complex:  # its real pairs (complex.py)
        buf = add_pairs_buffer(imp.program, name, data.dtype, sizes, BufferKind.CONSTANT)
        data = pairs_of(data)
    else:
        buf = imp.program.add(Buffer(name, meta_dtype(data, f"constant {fqn}"), sizes,
                                     BufferKind.CONSTANT))
    imp.program.constants.append(ConstantSpec(fqn, buf.name, data, tuple(folded_from)))
    imp.weights[buf.name] = (data, frozenset(folded_from or (fqn,)))
    return buffer_value(buf)
