"""The window functions (hann, hamming, blackman, bartlett, kaiser): creation ops of a
length known when compiling, folded then into a constant of the op's dtype, each value
PyTorch's own (the length and parameters are all the input it has)."""
from __future__ import annotations

import torch

from ..errors import UnsupportedOperatorError
from ..ir.expr import constant
from .context import LoweringContext
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "creation"
WINDOWS = (aten.hann_window, aten.hamming_window, aten.blackman_window, aten.bartlett_window,
           aten.kaiser_window)


def _folded(overload):
    def lower(ctx: LoweringContext, window_length, *params, **kwargs):
        if not isinstance(window_length, int):
            raise UnsupportedOperatorError(ctx.target, ctx.source,
                                           "the window's length must be known when compiling")
        options = {k: v for k, v in kwargs.items() if k not in ("device", "pin_memory", "layout")}
        options["dtype"] = getattr(torch, ctx.out_dtype.name)
        with torch.no_grad():
            value = overload(window_length, *params, **options, device="cpu")
        if value.numel() == 0:
            return ctx.pointwise(constant(0, ctx.out_dtype))
        return ctx.constant(value, "window")

    lower.__doc__ = f"{overload}: its values computed now, stored as a constant."
    return lower


for _packet in WINDOWS:
    for _name in _packet.overloads():
        _overload = getattr(_packet, _name)
        if "out" not in _name:
            register_lowering(_overload, family=FAMILY, in_storage_type=True)(_folded(_overload))
