"""Resampling: upsample nearest (1-3 dims), linear/bilinear/trilinear and bicubic, as
PyTorch's CPU kernels compute them.

Source positions follow torch's float32 arithmetic. Where that equals an exact integer
formula (i // k, i * in // out) the index is affine index arithmetic; otherwise the
positions (and linear weights) are tables computed at compile time and stored as
constants, read through indirect loads.
"""
from __future__ import annotations

import numpy as np
import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import Binary, BinaryOp, Cast, IndirectLoad, Load, Node, cast, constant, indirect_var
from ..ir.symbols import FloorDiv, index_vars
from .context import LoweringContext, TensorValue
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "resample"
F32 = np.float32


def _scales(n: int, output_size, scale_factors, *scales) -> list:
    if scale_factors is not None:
        return list(scale_factors) if len(scale_factors) == n else list(scale_factors) * n
    picked = [s for s in scales if s is not None] if scales else []
    return picked if len(picked) == n else [None] * n


def _ratio(m: int, o: int, scale) -> np.float32:
    """torch's compute_scales_value: 1/scale when given, else in/out, in float32."""
    if scale is not None and scale > 0:
        return F32(1.0 / scale)
    return F32(m) / F32(o)


def _nearest_positions(m: int, o: int, scale) -> np.ndarray:
    r = _ratio(m, o, scale)
    pos = np.floor(np.arange(o, dtype=F32) * r).astype(np.int64)
    return np.minimum(pos, m - 1)


def _gather(ctx: LoweringContext, x: TensorValue, per_dim: list) -> Node:
    """x at the output index, the last len(per_dim) dims read at their per-dim positions:
    each an index expression, or a constant int64 table of one position per output."""
    out = ctx.out_sizes
    iv = index_vars(len(out))
    lead = x.ndim - len(per_dim)
    src: list = list(iv[:lead])
    tables: list[Node] = []
    bounds = []
    for k, pos in enumerate(per_dim):
        if isinstance(pos, TensorValue):
            src.append(None)
            tables.append(pos.load((iv[lead + k],)))
            bounds.append(x.sizes[lead + k])
        else:
            src.append(pos)
    if not tables:
        return x.load(src)
    if not isinstance(x.body, Load):
        x = ctx.realize(x)
    it = iter(range(len(tables)))
    full = [indirect_var(next(it)) if s is None else s for s in src]
    inner = x.load(full)
    assert isinstance(inner, Load)
    return IndirectLoad(inner.buffer, inner.index, tuple(tables), tuple(bounds), x.dtype)


def _nearest(ctx: LoweringContext, x: TensorValue, n: int, scales: list) -> TensorValue:
    out = ctx.out_sizes
    iv = index_vars(len(out))
    lead = x.ndim - n
    per_dim: list = []
    for k in range(n):
        m, o, i = x.sizes[lead + k], out[lead + k], iv[lead + k]
        s = scales[k]
        if not (m.is_number and o.is_number):
            if s is None or float(s) != int(s) or int(s) < 1:
                raise UnsupportedOperatorError(ctx.target, ctx.source,
                                               "nearest resize of a dynamic dim by a "
                                               "non-integer factor")
            per_dim.append(FloorDiv(i, int(s)))  # 1/k in float32 floors like i // k
            continue
        pos = _nearest_positions(int(m), int(o), s)
        exact = np.arange(int(o)) * int(m) // int(o)
        if np.array_equal(pos, exact):
            per_dim.append(FloorDiv(i * int(m), int(o)))
        else:
            per_dim.append(ctx.constant(torch.from_numpy(pos), f"nearest{k}"))
    return ctx.pointwise(_gather(ctx, x, per_dim), out)


def _linear_tables(m: int, o: int, align_corners: bool, scale):
    """(first position, second position, weight of the second) of each output, as torch's
    area_pixel_compute_source_index computes them in float32."""
    i = np.arange(o, dtype=F32)
    if align_corners:
        r = F32(m - 1) / F32(o - 1) if o > 1 else F32(0)
        src = r * i
    else:
        src = np.maximum(_ratio(m, o, scale) * (i + F32(0.5)) - F32(0.5), F32(0))
    i0 = src.astype(np.int64)
    lam = np.clip(src - i0.astype(F32), F32(0), F32(1)).astype(F32)
    i1 = i0 + (i0 < m - 1)
    return i0, i1, lam


def _linear(ctx: LoweringContext, x: TensorValue, n: int, align_corners: bool,
            scales: list) -> TensorValue:
    out = ctx.out_sizes
    lead = x.ndim - n
    d = x.dtype
    if not d.is_floating:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"linear resize of {d.name}")
    iv = index_vars(len(out))
    tables = []
    for k in range(n):
        m, o = x.sizes[lead + k], out[lead + k]
        if not (m.is_number and o.is_number):
            raise UnsupportedOperatorError(ctx.target, ctx.source,
                                           "linear resize of a dynamic dim")
        i0, i1, lam = _linear_tables(int(m), int(o), align_corners, scales[k])
        tables.append((ctx.constant(torch.from_numpy(i0), f"lo{k}"),
                       ctx.constant(torch.from_numpy(i1), f"hi{k}"),
                       ctx.constant(torch.from_numpy(lam), f"weight{k}")))

    def blend(k: int, chosen: list) -> Node:
        """Along dim k: (1 - w) * (the rest at lo) + w * (the rest at hi)."""
        if k == n:
            return cast(_gather(ctx, x, chosen), d)
        lo_t, hi_t, w_t = tables[k]
        w = cast(w_t.load((iv[lead + k],)), d)
        one_minus = Binary(BinaryOp.SUB, constant(1, d), w, d)
        a = blend(k + 1, chosen + [lo_t])
        b = blend(k + 1, chosen + [hi_t])
        return Binary(BinaryOp.ADD, Binary(BinaryOp.MUL, one_minus, a, d),
                      Binary(BinaryOp.MUL, w, b, d), d)

    return ctx.pointwise(blend(0, []), out)


CUBIC_A = F32(-0.75)


def _cubic_tables(m: int, o: int, align_corners: bool, scale):
    """(4 positions, 4 weights) per output, [o, 4] each: torch's HelperInterpCubic in float32
    (source index without the clamp at 0, the Keys kernel with A = -0.75, taps clamped)."""
    i = np.arange(o, dtype=F32)
    if align_corners:
        src = (F32(m - 1) / F32(o - 1) if o > 1 else F32(0)) * i
    else:
        src = _ratio(m, o, scale) * (i + F32(0.5)) - F32(0.5)
    idx = np.minimum(np.floor(src).astype(np.int64), m - 1)
    t = np.clip(src - idx.astype(F32), F32(0), F32(1)).astype(F32)
    a = CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + F32(2)) * x - (a + F32(3))) * x * x + F32(1)

    def far(x):  # 1 < |x| < 2
        return ((a * x - F32(5) * a) * x + F32(8) * a) * x - F32(4) * a

    u = F32(1) - t
    weights = np.stack([far(t + F32(1)), near(t), near(u), far(u + F32(1))], 1).astype(F32)
    taps = np.clip(idx[:, None] + np.arange(-1, 3)[None, :], 0, m - 1)
    return taps, weights


def _bicubic(ctx: LoweringContext, x: TensorValue, align_corners: bool,
             scales: list) -> TensorValue:
    """sum_j wy_j * (sum_i wx_i * x[y_j, x_i]), accumulated in torch's order; the weights are
    stored in x's dtype, as torch's weight tables are."""
    out, d, lead = ctx.out_sizes, x.dtype, x.ndim - 2
    if not d.is_floating:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"bicubic resize of {d.name}")
    iv = index_vars(len(out))
    tables = []
    for k in range(2):
        m, o = x.sizes[lead + k], out[lead + k]
        if not (m.is_number and o.is_number):
            raise UnsupportedOperatorError(ctx.target, ctx.source,
                                           "bicubic resize of a dynamic dim")
        taps, weights = _cubic_tables(int(m), int(o), align_corners, scales[k])
        tables.append(([ctx.constant(torch.from_numpy(taps[:, j].copy()), f"tap{k}_{j}")
                        for j in range(4)],
                       ctx.constant(torch.from_numpy(weights).to(_weight_dtype(x)),
                                    f"cubic{k}")))

    def blend(k: int, chosen: list) -> Node:
        if k == 2:
            return cast(_gather(ctx, x, chosen), d)
        taps, w_t = tables[k]
        total: Node | None = None
        for j in range(4):
            w = cast(w_t.load((iv[lead + k], j)), d)
            term = Binary(BinaryOp.MUL, blend(k + 1, chosen + [taps[j]]), w, d)
            total = term if total is None else Binary(BinaryOp.ADD, total, term, d)
        assert total is not None
        return total

    return ctx.pointwise(blend(0, []), out)


def _weight_dtype(x: TensorValue) -> torch.dtype:
    """The dtype torch keeps resampling weights in: x's storage type (a half input arrives
    here widened to float32, as every half op computes in float32)."""
    stored = x.body.x.dtype if isinstance(x.body, Cast) else x.dtype
    return getattr(torch, stored.name if stored in (DType.float16, DType.bfloat16)
                   else x.dtype.name)


def _register_nearest(n: int) -> None:
    packet = getattr(aten, f"upsample_nearest{n}d")

    @register_lowering(packet.vec, family=FAMILY)
    def lower_vec(ctx, x, output_size, scale_factors):
        return _nearest(ctx, x, n, _scales(n, output_size, scale_factors))

    @register_lowering(packet.default, family=FAMILY)
    def lower(ctx, x, output_size, *scales):
        return _nearest(ctx, x, n, _scales(n, output_size, None, *scales))


def _register_linear(n: int, name: str) -> None:
    packet = getattr(aten, name)

    @register_lowering(packet.vec, family=FAMILY)
    def lower_vec(ctx, x, output_size, align_corners, scale_factors):
        return _linear(ctx, x, n, bool(align_corners), _scales(n, output_size, scale_factors))

    @register_lowering(packet.default, family=FAMILY)
    def lower(ctx, x, output_size, align_corners, *scales):
        return _linear(ctx, x, n, bool(align_corners), _scales(n, output_size, None, *scales))


@register_lowering(aten.upsample_bicubic2d.vec, family=FAMILY)
def lower_bicubic_vec(ctx, x, output_size, align_corners, scale_factors):
    return _bicubic(ctx, x, bool(align_corners), _scales(2, output_size, scale_factors))


@register_lowering(aten.upsample_bicubic2d.default, family=FAMILY)
def lower_bicubic(ctx, x, output_size, align_corners, *scales):
    return _bicubic(ctx, x, bool(align_corners), _scales(2, output_size, None, *scales))


for _n in (1, 2, 3):
    _register_nearest(_n)
for _n, _name in ((1, "upsample_linear1d"), (2, "upsample_bilinear2d"),
                  (3, "upsample_trilinear3d")):
    _register_linear(_n, _name)


# ---- anti-aliased bilinear: a triangle filter widened by the downscale factor -------------

def _aa_tables(m: int, o: int, align_corners: bool, scale):
    """(first tap [o], taps [o, K] clamped into the input, weights [o, K]) of torch's
    anti-aliased linear resampling along one dim, in float32 as its CPU kernel computes
    them: the window around center = scale * (i + 0.5) spans the filter's support (1, times
    the scale when downsampling), the weights are normalized to sum to 1, unused taps are 0."""
    if align_corners:
        r = F32(m - 1) / F32(o - 1) if o > 1 else F32(0)
    else:
        r = _ratio(m, o, scale)
    support = F32(r) if r >= 1 else F32(1)
    invscale = F32(1) / r if r >= 1 else F32(1)
    k = int(np.ceil(support)) * 2 + 1
    taps = np.zeros((o, k), np.int64)
    weights = np.zeros((o, k), F32)
    for i in range(o):
        center = F32(r * F32(i + F32(0.5)))
        lo = max(int(center - support + F32(0.5)), 0)
        size = min(max(min(int(center + support + F32(0.5)), m) - lo, 0), k)
        w = np.array([max(F32(1) - abs(F32((F32(j + lo) - center + F32(0.5)) * invscale)), F32(0))
                      for j in range(size)], F32)
        total = F32(w.sum(dtype=F32)) if size else F32(0)
        if total != 0:
            w = (w / total).astype(F32)
        weights[i, :size] = w
        taps[i] = np.minimum(lo + np.arange(k), m - 1)
    return taps, weights


def _aa_bilinear(ctx: LoweringContext, x: TensorValue, align_corners: bool,
                 scales: list) -> TensorValue:
    """Along the width first, then the height (torch's order): each pass a sum over the
    taps of weight * x at the tap, the taps and weights compile-time tables."""
    from ..ir.nodes import ReduceType, Reduction
    from ..ir.symbols import reduction_var

    out, d, lead = ctx.out_sizes, x.dtype, x.ndim - 2
    if not d.is_floating:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"bilinear resize of {d.name}")
    value = x
    for k in (1, 0):  # width, then height
        m, o = sympy.sympify(value.sizes[lead + k]), sympy.sympify(out[lead + k])
        if not (m.is_number and o.is_number):
            raise UnsupportedOperatorError(ctx.target, ctx.source,
                                           "anti-aliased resize of a dynamic dim")
        taps, weights = _aa_tables(int(m), int(o), align_corners, scales[k])
        tap_t = ctx.constant(torch.from_numpy(taps), f"aa_taps{k}")
        w_t = ctx.constant(torch.from_numpy(weights), f"aa_weights{k}")
        sizes = tuple(value.sizes[:lead + k]) + (o,) + tuple(value.sizes[lead + k + 1:])
        iv = index_vars(len(sizes))
        r = reduction_var(0)
        if not isinstance(value.body, Load):
            value = ctx.realize(value)
        inner = value.load(tuple(iv[:lead + k]) + (indirect_var(0),) + tuple(iv[lead + k + 1:]))
        assert isinstance(inner, Load)
        tap = tap_t.load((iv[lead + k], r))
        element = IndirectLoad(inner.buffer, inner.index, (tap,), (m,), value.dtype)
        body = Binary(BinaryOp.MUL, cast(w_t.load((iv[lead + k], r)), d), cast(element, d), d)
        value = ctx.emit(Reduction(ReduceType.SUM, (sympy.Integer(taps.shape[1]),), body), sizes, d,
                         hint=f"{ctx.node_name}_aa{k}")
    return value


@register_lowering(aten._upsample_bilinear2d_aa.vec, family=FAMILY)
def lower_aa_bilinear_vec(ctx, x, output_size, align_corners, scale_factors):
    return _aa_bilinear(ctx, x, align_corners, _scales(2, output_size, scale_factors))


@register_lowering(aten._upsample_bilinear2d_aa.default, family=FAMILY)
def lower_aa_bilinear(ctx, x, output_size, align_corners, *scales):
    return _aa_bilinear(ctx, x, align_corners, _scales(2, output_size, None, *scales))
