"""metadata.json: the model's inputs, outputs, symbols, pytree specs (torch's TreeSpec as the
runtime reads it, runtime/pytree.py), weights table and compile facts. Compile side: needs torch."""
from __future__ import annotations

import dataclasses
import json

import torch
import torch.utils._pytree as pytree

from .. import __version__
from ..errors import CompileError
from ..frontend.importer import to_sympy
from ..ir.complex import abi_dtype, abi_sizes
from ..ir.nodes import Program
from ..runtime.abi import ABI_VERSION
from ..scheduler.precision import target_metadata
from ..target import Target
from .schema import FORMAT_VERSION


def _json_value(value, what: str):
    """`value` as it reads back from JSON (tuples become lists), or a CompileError."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        raise CompileError(f"{what} holds {value!r}, which a package cannot store as JSON; "
                           "register the type with to_dumpable_context/from_dumpable_context "
                           "(torch.utils._pytree.register_pytree_node)") from None


def _node_spec(spec, kids: list) -> dict:
    """A node of a type registered with torch's pytree: a dataclass given to
    torch.export.register_dataclass, a ModelOutput-like mapping, any register_pytree_node
    class. The runtime rebuilds the type itself where it can find the class (module and
    qualname) with the flatten context recorded here, else a dict keyed by `fields` (a tuple
    when the context names no fields): runtime/pytree.py."""
    t, context = spec.type, spec.context
    name = f"{t.__module__}.{t.__qualname__}"
    entry = {"kind": "node", "module": t.__module__, "qualname": t.__qualname__,
             "children": kids}
    serialized = pytree.SUPPORTED_SERIALIZED_TYPES.get(t)
    if serialized is not None and serialized.to_dumpable_context is not None:
        entry["context"] = _json_value(serialized.to_dumpable_context(context),
                                       f"the pytree context of {name}")
        entry["context_dumped"] = True
    else:
        entry["context"] = _json_value(context, f"the pytree context of {name}")
    # the field names, read from the context itself (a dumped one is the type's own string)
    ctx = json.loads(json.dumps(context)) if _is_json(context) else None

    def names(x) -> bool:
        return isinstance(x, list) and all(isinstance(f, str) for f in x) \
            and len(set(x)) == len(x)

    if dataclasses.is_dataclass(t) and isinstance(ctx, list) and len(ctx) == 2 \
            and names(ctx[0]) and names(ctx[1]) and len(ctx[0]) == len(kids):
        entry["fields"], entry["none_fields"] = ctx  # register_dataclass: set and None fields
    elif names(ctx) and len(ctx) == len(kids):
        entry["fields"] = ctx  # a mapping's keys
    return entry


def _is_json(value) -> bool:
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


def spec_to_json(spec) -> dict:
    """torch's TreeSpec as the runtime's JSON structure."""
    if spec.is_leaf():
        return {"kind": "leaf"}
    kids = [spec_to_json(c) for c in spec.children()]
    t = spec.type
    if t is type(None):
        return {"kind": "none"}
    if t is dict or getattr(t, "__name__", "") in ("OrderedDict", "defaultdict"):
        keys = list(spec.context)
        if not all(isinstance(k, (str, int)) for k in keys):
            raise CompileError(f"dict keys {keys} cannot be stored in a package")
        return {"kind": "dict", "keys": keys, "children": kids}
    if t is list:
        return {"kind": "list", "children": kids}
    if t is tuple:
        return {"kind": "tuple", "children": kids}
    if isinstance(t, type) and issubclass(t, tuple):  # a namedtuple, or torch.return_types
        fields = getattr(t, "_fields", None) or getattr(t, "__match_args__", None)
        if fields is None or len(fields) != len(kids):
            return {"kind": "tuple", "children": kids}
        return {"kind": "tuple", "children": kids, "name": f"{t.__module__}.{t.__qualname__}",
                "fields": list(fields)}
    if isinstance(t, type) and t in pytree.SUPPORTED_NODES:
        return _node_spec(spec, kids)
    raise CompileError(f"inputs/outputs of type {t} are not supported (tuples, lists, dicts, "
                       "and types registered with torch's pytree)")


def _size_json(s):
    return int(s) if s.is_Integer else str(s)


def _target_json(target: Target, precision: str, p: Program) -> dict[str, str]:
    """The target a package records: its arch, and in cpu_features every CPU feature its code
    needs (the arch's, the precision's and that of bfloat16 weights packed for the bf16
    kernel, as /proc/cpuinfo spells them), which loaders check against the CPU so that they
    need no table of the arches' features."""
    extra = target_metadata(precision, target)
    needs = set(target.features) | set(extra.get("features", "").split())
    if any(getattr(c.packing, "dtype", "") == "bfloat16" for c in p.constants):
        assert target.bf16_feature is not None  # prepack packs bfloat16 only for such a level
        needs.add(target.bf16_feature)
    return {**target.metadata(), "architecture": target.architecture, **extra,
            "cpu_features": " ".join(sorted(needs))}


def build_metadata(ep, p: Program, constants: list[dict], timings: dict[str, float], *,
                   target: Target, precision: str, freezing: bool, num_threads: int,
                   user_metadata: dict[str, str]) -> dict:
    """metadata.json of program `p` compiled from `ep`; `constants` is the weights table and
    `timings` the seconds of the stages run so far."""
    user_inputs = [s for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    by_name = {s.name: s for s in p.inputs}
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    inputs = []
    for s in user_inputs:
        name = s.arg.name
        if name in by_name:
            buf = p.buffers[by_name[name].buffer]
            val = placeholders[name].meta["val"]
            inputs.append({"name": name, "kind": "tensor", "dtype": abi_dtype(p, buf.name).name,
                           "sizes": [_size_json(x) for x in abi_sizes(p, buf.name)]})
            if isinstance(val, torch.Tensor):  # an int input travels as a 0-dim tensor
                inputs[-1]["strides"] = [_size_json(to_sympy(x)) for x in val.stride()]
            if buf.name in p.updates:  # the run writes its new value into it
                inputs[-1]["mutated"] = True
            if buf.name in p.scalar_inputs:  # a Python int, passed as a 0-dim int64 tensor
                inputs[-1]["scalar"] = "int"
        else:
            val = placeholders[name].meta.get("val")
            inputs.append({"name": name, "kind": "scalar", "value": val})
    outputs = [{"name": o, "dtype": abi_dtype(p, o).name,
                "sizes": [_size_json(x) for x in abi_sizes(p, o)]} for o in p.outputs]
    leaves = [{"kind": "tensor", "index": p.outputs.index(leaf.buffer)} if leaf.buffer
              else {"kind": "constant", "value": leaf.value} for leaf in p.output_leaves]
    for leaf, entry in zip(p.output_leaves, leaves):
        if leaf.scalar:  # a symbolic value: returned as a Python number
            entry["scalar"] = leaf.scalar
    return {
        "format_version": FORMAT_VERSION,
        "abi_version": ABI_VERSION,
        "aotc_version": __version__,
        "torch_version": torch.__version__,
        "target": _target_json(target, precision, p),
        "inputs": inputs,
        "outputs": outputs,
        "output_leaves": leaves,
        "symbols": {str(k): [lo, hi] for k, (lo, hi) in sorted(p.symbols.items(), key=str)},
        "in_spec": spec_to_json(ep.call_spec.in_spec),
        "out_spec": spec_to_json(ep.call_spec.out_spec),
        "constants": constants,
        # registered buffers the program updates in place: model state
        "state": [c.fqn for c in p.constants if c.buffer in p.updates],
        # output sizes depend on input values (.item()), not only on input sizes
        "sizes_follow_data": bool(p.item_symbols),
        "num_threads": num_threads,
        "freezing": freezing,
        "user_metadata": dict(user_metadata),
        "compile_seconds": round(sum(timings.values()), 4),
        "stage_seconds": {k: round(v, 4) for k, v in timings.items()},
    }
