"""The one registry of lowerings: ATen overload -> rule building loop-level IR.

Rules live by family in the sibling modules; importing `aotc.lowering` registers them all.
The registry also answers which ops are covered (coverage table, unsupported-op errors).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

LOWERINGS: dict[object, Rule] = {}


class Decompose(Exception):
    """Raised by a rule, before it adds anything to the program, for a call it leaves to
    the op's decomposition (a template kernel that does not take this dtype)."""


@dataclass(frozen=True)
class Rule:
    fn: Callable
    family: str


def register_lowering(*ops, family: str) -> Callable:
    """Register `fn(ctx, *args, **kwargs) -> TensorValue | tuple` for each ATen overload.

    Passing an OpOverloadPacket registers every overload of it.
    """

    def wrap(fn: Callable) -> Callable:
        for op in ops:
            overloads = [getattr(op, o) for o in op.overloads()] if hasattr(op, "overloads") else [op]
            for ov in overloads:
                if ov in LOWERINGS:
                    raise ValueError(f"two lowerings registered for {ov}")
                LOWERINGS[ov] = Rule(fn, family)
        return fn

    return wrap


def lookup(op) -> Rule | None:
    return LOWERINGS.get(op)


def covered_ops() -> dict[str, str]:
    """ATen overload name -> family, for the coverage table."""
    return {str(op): rule.family for op, rule in sorted(LOWERINGS.items(), key=lambda kv: str(kv[0]))}
