"""Padding: constant (negative pads crop), reflect, replicate and circular, as index
arithmetic over the input; `pad` with its mode string, and the per-mode ATen ops."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import Binary, BinaryOp, IndexValue, Node, Where, cast, constant
from ..ir.symbols import ModIndex, index_vars, surely_at_least, upper_bound
from .context import LoweringContext, TensorValue
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "padding"


def _pads_by_dim(x: TensorValue, pads) -> dict[int, tuple[sympy.Expr, sympy.Expr]]:
    """F.pad's flat list (last dim first, (before, after) each) as {dim: (before, after)}."""
    out = {}
    for k in range(len(pads) // 2):
        out[x.ndim - 1 - k] = (sympy.sympify(pads[2 * k]), sympy.sympify(pads[2 * k + 1]))
    return out


def _value(e) -> Node:
    e = sympy.sympify(e)
    return constant(int(e), DType.int64) if e.is_number else IndexValue(e, DType.int64)


def at_least_zero(e: sympy.Expr) -> Node | None:
    """0 <= e as a bool value; None when surely true."""
    if sympy.expand(e).is_nonnegative:
        return None
    return Binary(BinaryOp.GE, _value(e), constant(0, DType.int64), DType.bool)


def below(e: sympy.Expr, n: sympy.Expr, ranges: dict) -> Node | None:
    """e < n as a bool value; None when the loop ranges make it surely true."""
    ub = upper_bound(sympy.expand(e), ranges)
    if ub is not None and surely_at_least(sympy.expand(n - 1 - ub), 0):
        return None
    return Binary(BinaryOp.LT, _value(e), _value(n), DType.bool)


def both(a: Node | None, b: Node | None) -> Node | None:
    if a is None or b is None:
        return a if b is None else b
    return Binary(BinaryOp.AND, a, b, DType.bool)


def clamp_index(e: sympy.Expr, n: sympy.Expr) -> sympy.Expr:
    """e clamped into [0, n): an always-valid index for the branch a Where does not take
    (unevaluated: sympy's own Min/Max simplification costs milliseconds each)."""
    return sympy.Min(sympy.Max(e, 0, evaluate=False), n - 1, evaluate=False)


def constant_pad(ctx: LoweringContext, x: TensorValue, pads, value) -> TensorValue:
    by_dim = _pads_by_dim(x, pads)
    out = tuple(sympy.expand(s + sum(by_dim.get(d, (0, 0)))) for d, s in enumerate(x.sizes))
    iv = index_vars(x.ndim)
    ranges = dict(zip(iv, out))
    src, valid = list(iv), None
    for d, (before, _) in by_dim.items():
        pos = iv[d] - before
        cond = both(at_least_zero(pos), below(pos, x.sizes[d], ranges))
        src[d] = pos if cond is None else clamp_index(pos, x.sizes[d])
        valid = both(valid, cond)
    body = x.load(src)
    if valid is not None:
        body = Where(valid, body, constant(value if value is not None else 0, x.dtype), x.dtype)
    return ctx.pointwise(cast(body, x.dtype), out)


def _mode_index(mode: str, j: sympy.Expr, n: sympy.Expr) -> sympy.Expr:
    """The source position along a dim of size n for padded position j (j = out - before)."""
    if mode == "reflect":  # -1 -> 1, n -> n - 2: n-1 - |n-1 - |j||
        a = sympy.Max(j, -j)
        b = n - 1 - a
        return n - 1 - sympy.Max(b, -b)
    if mode == "replicate":
        return clamp_index(j, n)
    raise ValueError(mode)


def _circular_index(i: sympy.Expr, n: sympy.Expr, before, after) -> sympy.Expr:
    """torch crops first (negative pads), then wraps around what is left."""
    start = sympy.Max(-before, 0)
    kept = n - start - sympy.Max(-after, 0)
    return start + ModIndex(i - sympy.Max(before, 0) + kept, kept)


def mode_pad(ctx: LoweringContext, x: TensorValue, pads, mode: str) -> TensorValue:
    by_dim = _pads_by_dim(x, pads)
    for d, (before, after) in by_dim.items():
        n = x.sizes[d]
        limit = {"reflect": n - 1, "circular": n}.get(mode)  # negative pads crop
        for p in (before, after):
            if limit is not None and p.is_number and limit.is_number and p > limit:
                raise UnsupportedOperatorError(
                    ctx.target, ctx.source,
                    f"{mode} padding of {p} on a dim of size {n} (at most {limit})")
    out = tuple(sympy.expand(s + sum(by_dim.get(d, (0, 0)))) for d, s in enumerate(x.sizes))
    iv = index_vars(x.ndim)
    src = list(iv)
    for d, (before, after) in by_dim.items():
        src[d] = _circular_index(iv[d], x.sizes[d], before, after) if mode == "circular" \
            else _mode_index(mode, iv[d] - before, x.sizes[d])
    return ctx.pointwise(x.load(src), out)


@register_lowering(aten.constant_pad_nd.default, family=FAMILY)
def lower_constant_pad_nd(ctx, x, pad, value=0):
    return constant_pad(ctx, x, pad, value)


@register_lowering(aten.pad.default, family=FAMILY)
def lower_pad(ctx, x, pad, mode="constant", value=None):
    if mode == "constant":
        return constant_pad(ctx, x, pad, value)
    if mode not in ("reflect", "replicate", "circular"):
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"pad mode {mode!r}")
    return mode_pad(ctx, x, pad, mode)


@register_lowering(aten.reflection_pad1d.default, aten.reflection_pad2d.default,
                   aten.reflection_pad3d.default, family=FAMILY)
def lower_reflection_pad(ctx, x, padding):
    return mode_pad(ctx, x, padding, "reflect")


@register_lowering(aten.replication_pad1d.default, aten.replication_pad2d.default,
                   aten.replication_pad3d.default, family=FAMILY)
def lower_replication_pad(ctx, x, padding):
    return mode_pad(ctx, x, padding, "replicate")


@register_lowering(aten._pad_circular.default, family=FAMILY)
def lower_circular_pad(ctx, x, padding):
    return mode_pad(ctx, x, padding, "circular")
