"""Half-precision ops compute in float32, as PyTorch's CPU kernels do: a rule whose inputs or
outputs are float16/bfloat16 sees its half inputs widened to float32 (exact) and computes
in float32, and each half output is rounded once, when the op's value is complete. So a
GELU or a softmax of a half tensor rounds once, not at every step of its formula."""
from __future__ import annotations

from dataclasses import replace

from ..dtypes import DType
from ..ir.expr import Cast
from .context import LoweringContext, TensorValue

HALF = (DType.float16, DType.bfloat16)


def _is_half_tensor(value) -> bool:
    return isinstance(value, TensorValue) and value.dtype in HALF


def _any(value, test) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_any(v, test) for v in value)
    if isinstance(value, dict):
        return any(_any(v, test) for v in value.values())
    return test(value)


def _map(value, fn):
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map(v, fn) for k, v in value.items()}
    return fn(value)


def _widen(value):
    if not _is_half_tensor(value):
        return value
    return TensorValue(value.sizes, DType.float32, Cast(value.body, DType.float32))


def _wide(d: DType) -> DType:
    return DType.float32 if d in HALF else d


def involves_half(ctx: LoweringContext, args, kwargs) -> bool:
    outs = any(o is not None and o[1] in HALF for o in ctx.outputs)
    return outs or _any(args, _is_half_tensor) or _any(kwargs, _is_half_tensor)


def lower_in_float(rule, ctx: LoweringContext, args, kwargs):
    """`rule` applied in float32 to a node that reads or returns half tensors."""
    wide = replace(ctx, out_dtype=_wide(ctx.out_dtype),
                   outputs=tuple(None if o is None else (o[0], _wide(o[1])) for o in ctx.outputs))
    result = rule(wide, *_map(args, _widen), **_map(kwargs, _widen))
    expected = [None if o is None else o[1] for o in ctx.outputs]

    def narrow(value, dtype):
        if not isinstance(value, TensorValue) or dtype not in HALF or value.dtype is dtype:
            return value
        return ctx.pointwise(Cast(value.body, dtype), value.sizes)

    if isinstance(result, (tuple, list)):
        return type(result)(narrow(v, expected[k] if k < len(expected) else None)
                            for k, v in enumerate(result))
    return narrow(result, expected[0] if expected else None)
