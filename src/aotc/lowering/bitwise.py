"""Ops on the bits of values: shifts of integers with PyTorch's semantics (`<<`, `>>`,
bitwise_left/right_shift: a count outside [0, bits) gives 0 to the left and the sign to the
right) and hash_tensor (the xor of the elements' 64-bit patterns)."""
from __future__ import annotations

import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import Binary, BinaryOp, Unary, UnaryOp, cast, constant
from ..ir.regions import RegionWrite, Write
from ..ir.symbols import index_vars
from .common import dims_list, operand, promote
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


@register_lowering(aten.hash_tensor.default, family=FAMILY)
def lower_hash_tensor(ctx, x, dim=(), *, keepdim=False, mode=0):
    """The xor over `dim` (every dim when empty) of each element's bits, the element widened
    to float64 or int64 first, as uint64: every element xor-ed into its output position."""
    if mode != 0:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"mode={mode} (only 0, the xor "
                                       "reduction, exists)")
    dims = dims_list(dim, x.ndim)
    iv = index_vars(x.ndim)
    if keepdim:
        dest = tuple(0 if k in dims else v for k, v in enumerate(iv))
    else:
        dest = tuple(v for k, v in enumerate(iv) if k not in dims)
    bits = Unary(UnaryOp.BITS64, x.load(iv), DType.uint64)
    write = Write(x.sizes, dest, bits, combine=BinaryOp.BITWISE_XOR)
    return ctx.emit(RegionWrite(constant(0, DType.uint64), (write,)), ctx.out_sizes,
                    DType.uint64)
