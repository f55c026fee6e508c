"""Shifts of integers with PyTorch's semantics (`<<`, `>>`, bitwise_left/right_shift):
a count outside [0, bits) gives 0 to the left and the sign to the right."""
from __future__ import annotations

import torch

from ..errors import UnsupportedOperatorError
from ..ir.expr import Binary, BinaryOp, cast
from .common import operand, promote
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "bitwise"


def _overloads(*names: str) -> list:
    out = []
    for name in names:
        packet = getattr(aten, name)
        out += [getattr(packet, o) for o in packet.overloads()]
    return out


@register_lowering(*_overloads("__lshift__", "__rshift__", "bitwise_left_shift",
                               "bitwise_right_shift"), family=FAMILY)
def lower_shift(ctx, a, b):
    d = promote(a, b)
    if not d.is_integer or d.name == "bool":
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"shifts of {d.name} values")
    op = BinaryOp.LSHIFT if ("lshift" in ctx.target or "left" in ctx.target) else BinaryOp.RSHIFT
    s = ctx.out_sizes
    return ctx.pointwise(cast(Binary(op, operand(a, d, s), operand(b, d, s), d), ctx.out_dtype))
