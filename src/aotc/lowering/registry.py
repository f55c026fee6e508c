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
    in_storage_type: bool = False  # computes half values in their own type, not in float32
    on_pairs: bool = False  # takes and returns complex values as their (real, imag) pairs


def register_lowering(*ops, family: str, in_storage_type: bool = False,
                      on_pairs: bool = False) -> Callable:
    """Register `fn(ctx, *args, **kwargs) -> TensorValue | tuple` for each ATen overload.

    Passing an OpOverloadPacket registers every overload of it. Half-precision operands
    are widened to float32 around the rule (lowering/opmath.py) unless `in_storage_type`:
    an op on the bits of its type (nextafter) sees them as they are. A rule `on_pairs`
    gets a complex operand, and gives a complex result, as the real tensor of its pairs
    (sizes + (2,)) instead of going through frontend/complex.py (the Fourier transforms).
    """

    def wrap(fn: Callable) -> Callable:
        for op in ops:
            overloads = [getattr(op, o) for o in op.overloads()] if hasattr(op, "overloads") else [op]
            for ov in overloads:
                if ov in LOWERINGS:
                    raise ValueError(f"two lowerings registered for {ov}")
                LOWERINGS[ov] = Rule(fn, family, in_storage_type, on_pairs)
        return fn

    return wrap


def lookup(op) -> Rule | None:
    return LOWERINGS.get(op)


def covered_ops() -> dict[str, str]:
    """ATen overload name -> family, for the coverage table."""
    return {str(op): rule.family for op, rule in sorted(LOWERINGS.items(), key=lambda kv: str(kv[0]))}
