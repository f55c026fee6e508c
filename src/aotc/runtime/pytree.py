"""Input/output structure of a model (the exported program's pytree specs), torch-free.

Specs are JSON: {"kind": "leaf"} | {"kind": "none"} | {"kind": "tuple"|"list",
"children": [...]} | {"kind": "dict", "keys": [...], "children": [...]}; a named tuple (a
collections.namedtuple, or torch.return_types.sort and the like) adds "name" and "fields".
"""
from __future__ import annotations

import collections
import functools
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
    raise InputError(f"unknown structure kind {kind!r} in the package")


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
