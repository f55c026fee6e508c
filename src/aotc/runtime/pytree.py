"""Input/output structure of a model (the exported program's pytree specs), torch-free.

Specs are JSON: {"kind": "leaf"} | {"kind": "none"} | {"kind": "tuple"|"list",
"children": [...]} | {"kind": "dict", "keys": [...], "children": [...]}; a named tuple (a
collections.namedtuple, or torch.return_types.sort and the like) adds "name" and "fields".

{"kind": "node", "module", "qualname", "context", "children", "fields"?, "none_fields"?} is
a type registered with torch's pytree (a dataclass given to torch.export.register_dataclass,
a ModelOutput-like mapping, a register_pytree_node class). It comes back as that type when
the class can be found: with torch loaded, its module is imported if need be and torch's
registered unflatten rebuilds it from the recorded context; without torch (the numpy-only
runtime) no module is imported (one may import torch), and a dataclass whose module the
process has already imported is built from its fields. Otherwise the plain equivalent: a dict
keyed by field ("fields", then the "none_fields" holding None), or a tuple of the children
when the type names no fields.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import importlib
import json
import sys

from ..errors import InputError


def flatten(spec: dict, value, path: str = "input") -> list:
    kind = spec["kind"]
    if kind == "leaf":
        return [value]
    if kind == "none":
        if value is not None:
            raise InputError(f"{path}: expected None, got {type(value).__name__}")
        return []
    kids = spec["children"]
    if kind in ("tuple", "list"):
        if not isinstance(value, (tuple, list)) or len(value) != len(kids):
            n = len(value) if isinstance(value, (tuple, list)) else type(value).__name__
            raise InputError(f"{path}: expected a {kind} of {len(kids)} items, got {n}")
        return [x for k, (s, v) in enumerate(zip(kids, value)) for x in flatten(s, v, f"{path}[{k}]")]
    if kind == "dict":
        keys = spec["keys"]
        if not isinstance(value, dict) or set(value) != set(keys):
            got = sorted(map(str, value)) if isinstance(value, dict) else type(value).__name__
            raise InputError(f"{path}: expected a dict with keys {keys}, got {got}")
        return [x for s, key in zip(kids, keys) for x in flatten(s, value[key], f"{path}[{key!r}]")]
    if kind == "node":
        return [x for k, (s, v) in enumerate(zip(kids, _node_children(spec, value, path)))
                for x in flatten(s, v, f"{path}.{spec['fields'][k]}" if "fields" in spec
                                 else f"{path}[{k}]")]
    raise InputError(f"unknown structure kind {kind!r} in the package")


def _node_children(spec: dict, value, path: str) -> list:
    """The children of `value` for a "node" spec: an instance of the type (through torch's
    registered flatten when torch is loaded), or its plain equivalent (a dict by field)."""
    kids, fields = spec["children"], spec.get("fields")
    none_fields = spec.get("none_fields", [])
    name = spec["qualname"]
    cls = node_class(spec["module"], spec["qualname"])
    if cls is not None and isinstance(value, cls):
        node = _torch_node(cls)
        if node is not None:
            children, context = node.flatten_fn(value)
            if spec.get("context_dumped"):
                import torch.utils._pytree as torch_pytree

                context = torch_pytree.SUPPORTED_SERIALIZED_TYPES[cls].to_dumpable_context(
                    context)
            if _as_json(context) != spec["context"]:
                raise InputError(f"{path}: this {name} is not laid out as the exported one "
                                 f"(pytree context {_as_json(context)!r}, exported "
                                 f"{spec['context']!r})")
            return list(children)
        if fields is not None:
            if any(getattr(value, f, None) is not None for f in none_fields):
                raise InputError(f"{path}: fields {none_fields} of this {name} were None when "
                                 "it was exported")
            return [getattr(value, f) for f in fields]
    if fields is not None and isinstance(value, dict):
        if set(value) - set(none_fields) != set(fields) or \
                any(value.get(f) is not None for f in none_fields):
            raise InputError(f"{path}: expected a {name} or a dict with keys {fields}"
                             + (f" (and None for {none_fields})" if none_fields else "")
                             + f", got keys {sorted(map(str, value))}")
        return [value[f] for f in fields]
    if fields is None and isinstance(value, (tuple, list)) and len(value) == len(kids):
        return list(value)
    what = f"a dict with keys {fields}" if fields is not None else f"a tuple of {len(kids)}"
    raise InputError(f"{path}: expected a {name} or {what}, got {type(value).__name__}")


def _as_json(value):
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return value


_IMPORT_FAILED: set[str] = set()


def node_class(module: str, qualname: str) -> type | None:
    """The class a "node" spec names, if this process can have it: with torch loaded its
    module is imported when it is not yet (an import that fails is not retried); without
    torch only an already imported module is looked in."""
    mod = sys.modules.get(module)
    if mod is None and "torch" in sys.modules and module not in _IMPORT_FAILED:
        try:
            mod = importlib.import_module(module)
        except Exception:  # not importable here: the plain equivalent
            _IMPORT_FAILED.add(module)
    obj = mod
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) else None


def _torch_node(cls: type):
    """torch's pytree registration of `cls`, when torch is loaded and has one."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    import torch.utils._pytree as torch_pytree

    return torch_pytree.SUPPORTED_NODES.get(cls)


def _rebuild(spec: dict, kids: list):
    """The value of a "node" spec: its type where it can be found, else its plain form."""
    fields, none_fields = spec.get("fields"), spec.get("none_fields", [])
    cls = node_class(spec["module"], spec["qualname"])
    node = _torch_node(cls) if cls is not None else None
    if node is not None:
        context = spec["context"]
        if spec.get("context_dumped"):
            import torch.utils._pytree as torch_pytree

            context = torch_pytree.SUPPORTED_SERIALIZED_TYPES[cls].from_dumpable_context(context)
        return node.unflatten_fn(kids, context)
    if cls is not None and dataclasses.is_dataclass(cls) and fields is not None:
        try:
            return cls(**dict(zip(fields, kids)), **dict.fromkeys(none_fields))
        except TypeError:  # its constructor does not take its fields: the plain form
            pass
    if fields is None:
        return tuple(kids)
    return {**dict(zip(fields, kids)), **dict.fromkeys(none_fields)}


def count_leaves(spec: dict) -> int:
    kind = spec["kind"]
    if kind == "leaf":
        return 1
    if kind == "none":
        return 0
    return sum(count_leaves(s) for s in spec["children"])


def unflatten(spec: dict, leaves: list):
    it = iter(leaves)

    def build(s):
        kind = s["kind"]
        if kind == "leaf":
            return next(it)
        if kind == "none":
            return None
        kids = [build(c) for c in s["children"]]
        if kind == "tuple":
            if "fields" in s:
                return named_tuple(s["name"], tuple(s["fields"]), "torch" in sys.modules)(*kids)
            return tuple(kids)
        if kind == "list":
            return kids
        if kind == "node":
            return _rebuild(s, kids)
        return dict(zip(s["keys"], kids))

    return build(spec)


def flatten_call(spec: dict, args: tuple, kwargs: dict) -> list:
    """Leaves of a call's (args, kwargs) against the exported (args, kwargs) spec."""
    if spec["kind"] != "tuple" or len(spec["children"]) != 2:
        return flatten(spec, (args, kwargs))
    arg_spec, kw_spec = spec["children"]
    n = len(arg_spec["children"])
    if len(args) != n:
        raise InputError(f"expected {n} positional input{'s' if n != 1 else ''}, got {len(args)}")
    leaves = flatten(arg_spec, tuple(args), "input")
    kw_keys = kw_spec.get("keys", [])
    if set(kwargs) != set(kw_keys):
        raise InputError(f"expected keyword inputs {sorted(kw_keys)}, got {sorted(kwargs)}")
    return leaves + flatten(kw_spec, dict(kwargs), "kwargs")


@functools.cache
def named_tuple(name: str, fields: tuple, with_torch: bool):
    """A constructor of the named tuple a spec names: torch's own return type when torch is
    loaded (so results are what eager returns), else a namedtuple with the same fields."""
    module, _, short = name.rpartition(".")
    torch = sys.modules.get("torch") if with_torch else None
    if torch is not None and module == "torch.return_types" and hasattr(torch.return_types, short):
        real = getattr(torch.return_types, short)
        return lambda *kids: real(kids)
    return collections.namedtuple(short if short.isidentifier() else "outputs", fields, rename=True)
