"""Tensor-subclass weights (torchao's quantized tensors: Int8Tensor, IntxUnpackedToInt8Tensor)
flattened at import: each inner tensor (qdata, scale, zero_point) becomes a constant of its own,
named `<weight>.<attr>`, which the graph's `export.access_subclass_inner_tensor` nodes read.
The subclass itself is never stored: a package holds plain tensors only."""
from __future__ import annotations

from dataclasses import dataclass

import sympy
import torch
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from ..errors import UnsupportedOperatorError
from ..ir.nodes import Buffer, BufferKind, ConstantSpec, Program
from ..lowering import TensorValue, buffer_value
from .source import user_source

ACCESS = torch.ops.export.access_subclass_inner_tensor.default


@dataclass(frozen=True)
class SubclassWeight:
    """A flattened subclass weight: its name and, per inner attribute, the constant holding
    it (a nested subclass is a SubclassWeight again)."""

    fqn: str
    type_name: str
    parts: dict[str, TensorValue | SubclassWeight]


def is_subclass(value) -> bool:
    return isinstance(value, torch.Tensor) and is_traceable_wrapper_subclass(value)


def flatten_weight(program: Program, name: str, fqn: str, data: torch.Tensor,
                   weights: dict) -> SubclassWeight:
    """Constants for each inner tensor of `data` (buffer `c_<name>_<attr>`, constant
    `<fqn>.<attr>`); `weights` gets {buffer: (value, its name)} for each, as freezing reads."""
    attrs, _ = data.__tensor_flatten__()  # type: ignore[attr-defined]
    parts: dict[str, TensorValue | SubclassWeight] = {}
    for attr in attrs:
        inner = getattr(data, attr)
        if is_subclass(inner):
            parts[attr] = flatten_weight(program, f"{name}_{attr}", f"{fqn}.{attr}", inner, weights)
            continue
        from .importer import meta_dtype  # importer.py imports this module

        host = inner.detach().contiguous().cpu()
        buf = program.add(Buffer(f"c_{name}_{attr}", meta_dtype(host, f"constant {fqn}.{attr}"),
                                 tuple(sympy.Integer(s) for s in host.shape), BufferKind.CONSTANT))
        program.constants.append(ConstantSpec(f"{fqn}.{attr}", buf.name, host))
        weights[buf.name] = (host, frozenset([f"{fqn}.{attr}"]))
        parts[attr] = buffer_value(buf)
    return SubclassWeight(fqn, type(data).__name__, parts)


def inner_part(weight: SubclassWeight, attr: str, node: torch.fx.Node):
    """What `access_subclass_inner_tensor(weight, attr)` reads."""
    if attr not in weight.parts:
        raise UnsupportedOperatorError(
            str(node.target), user_source(node.meta.get("stack_trace")) or node.name,
            f"{weight.type_name} weight {weight.fqn} has no inner tensor {attr!r} "
            f"(it has {', '.join(weight.parts)})")
    return weight.parts[attr]


def refuse_whole_subclass(node: torch.fx.Node, args) -> None:
    """An op reading a subclass weight as a whole (not through its inner tensors) has no
    lowering: the subclass's own dispatch would decide what it computes."""
    for a in args:
        if isinstance(a, SubclassWeight):
            raise UnsupportedOperatorError(
                str(node.target), user_source(node.meta.get("stack_trace")) or node.name,
                f"it reads the {a.type_name} weight {a.fqn} as a whole; aotc compiles "
                "tensor-subclass weights only through their inner tensors, as torch.export "
                "writes them (export.access_subclass_inner_tensor)")


def inner_weights(graph: torch.fx.Graph, env: dict, weights: dict, by_buffer: dict) -> dict:
    """`weights` ({node: (value, names)}, what freezing folds from) with each subclass
    placeholder replaced by the access nodes reading its inner tensors, now bound in `env`;
    `by_buffer`: {constant buffer: (value, names)}, as flatten_weight filled it."""
    found = {n: w for n, w in weights.items() if not isinstance(env.get(n), SubclassWeight)}
    for node in graph.nodes:
        if node.op != "call_function" or node.target is not ACCESS:
            continue
        owner = env.get(node.args[0])
        if isinstance(owner, SubclassWeight):
            part = inner_part(owner, node.args[1], node)
            env[node] = part
            if isinstance(part, TensorValue):
                found[node] = by_buffer[part.buffer_name()]
    return found
