"""grid_sample (`grid_sampler_2d`, `grid_sampler_3d`): each output reads the input at the
position its grid entry names, with PyTorch's CPU arithmetic: unnormalize, then border or
reflection padding of the coordinate, then bilinear (trilinear), nearest or bicubic taps.

Taps are data-dependent loads: each position is clamped into the input (so no load leaves
its buffer) and a tap outside the input counts as zero, as with padding_mode='zeros'.
"""
from __future__ import annotations

import itertools

import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import (
    Binary,
    BinaryOp,
    Cast,
    IndexValue,
    IndirectLoad,
    Load,
    Node,
    Unary,
    UnaryOp,
    Where,
    cast,
    constant,
    indirect_var,
)
from ..ir.symbols import index_vars
from .context import LoweringContext, TensorValue
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "resample"
MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
PADDINGS = {0: "zeros", 1: "border", 2: "reflection"}


class _Math:
    """Node builders in one floating dtype."""

    def __init__(self, dtype: DType):
        self.d = dtype

    def c(self, v) -> Node:
        return constant(v, self.d)

    def size(self, n: sympy.Expr) -> Node:
        return constant(int(n), self.d) if n.is_number else IndexValue(n, self.d)

    def add(self, a, b):
        return Binary(BinaryOp.ADD, a, b, self.d)

    def sub(self, a, b):
        return Binary(BinaryOp.SUB, a, b, self.d)

    def mul(self, a, b):
        return Binary(BinaryOp.MUL, a, b, self.d)

    def div(self, a, b):
        return Binary(BinaryOp.DIV, a, b, self.d)

    def floor(self, a):
        return Unary(UnaryOp.FLOOR, a, self.d)

    def trunc(self, a):
        return Unary(UnaryOp.TRUNC, a, self.d)

    def clip(self, a, hi):
        """min(hi, max(a, 0))."""
        return Binary(BinaryOp.MINIMUM, Binary(BinaryOp.MAXIMUM, a, self.c(0), self.d), hi, self.d)

    def cmp(self, op: BinaryOp, a, b):
        return Binary(op, a, b, DType.bool)

    def cubic(self, t) -> list[Node]:
        """Keys cubic convolution weights (A = -0.75) of the four taps around t in [0, 1)."""
        a = self.c(-0.75)

        def near(x):
            inner = self.sub(self.mul(self.add(a, self.c(2)), x), self.add(a, self.c(3)))
            return self.add(self.mul(self.mul(inner, x), x), self.c(1))

        def far(x):
            s = self.sub(self.mul(a, x), self.mul(self.c(5), a))
            s = self.add(self.mul(s, x), self.mul(self.c(8), a))
            return self.sub(self.mul(s, x), self.mul(self.c(4), a))

        u = self.sub(self.c(1), t)
        return [far(self.add(t, self.c(1))), near(t), near(u), far(self.add(u, self.c(1)))]


def _unnormalize(m: _Math, coord: Node, size: sympy.Expr, align_corners: bool) -> Node:
    one = m.c(1)
    if align_corners:  # ((c + 1) / 2) * (size - 1)
        return m.mul(m.div(m.add(coord, one), m.c(2)), m.size(size - 1))
    return m.div(m.sub(m.mul(m.add(coord, one), m.size(size)), one), m.c(2))


def _reflect(m: _Math, p: Node, size: sympy.Expr, align_corners: bool) -> Node:
    """torch's reflect_coordinates over [-0.5, size - 0.5] (or [0, size - 1] aligned)."""
    low, span = (sympy.Integer(0), size - 1) if align_corners else (sympy.Rational(-1, 2), size)
    if span.is_number and span == 0:
        return m.c(0)
    lo, sp = m.c(float(low)), m.size(span)
    x = Unary(UnaryOp.ABS, m.sub(p, lo), m.d)
    extra = Binary(BinaryOp.FMOD, x, sp, m.d)
    flips = m.floor(m.div(x, sp))
    even = m.cmp(BinaryOp.EQ, Binary(BinaryOp.FMOD, flips, m.c(2), m.d), m.c(0))
    out = Where(even, m.add(extra, lo), m.add(m.sub(sp, extra), lo), m.d)
    return out if span.is_number else Where(m.cmp(BinaryOp.EQ, sp, m.c(0)), m.c(0), out, m.d)


def _pad(m: _Math, p: Node, size: sympy.Expr, padding: str, align_corners: bool) -> Node:
    if padding == "border":
        return m.clip(p, m.size(size - 1))
    if padding == "reflection":
        return m.clip(_reflect(m, p, size, align_corners), m.size(size - 1))
    return p


class _Taps:
    """Reads of x[n, c, <spatial positions>] at float positions holding whole numbers: zero
    where a position is outside the input, the position clamped into it otherwise."""

    def __init__(self, m: _Math, x: TensorValue, iv):
        self.m, self.x, self.iv = m, x, iv
        load = x.load((iv[0], iv[1]) + tuple(indirect_var(k) for k in range(x.ndim - 2)))
        assert isinstance(load, Load)
        self.load = load

    def at(self, positions: list[Node]) -> Node:
        m, sizes = self.m, self.x.sizes[2:]
        inside: Node | None = None
        idx = []
        for p, n in zip(positions, sizes):
            top = m.size(n - 1)
            ok = Binary(BinaryOp.AND, m.cmp(BinaryOp.GE, p, m.c(0)), m.cmp(BinaryOp.LE, p, top),
                        DType.bool)
            inside = ok if inside is None else Binary(BinaryOp.AND, inside, ok, DType.bool)
            idx.append(cast(m.clip(p, top), DType.int64))
        value = IndirectLoad(self.load.buffer, self.load.index, tuple(idx), tuple(sizes),
                             self.x.dtype)
        assert inside is not None
        return Where(inside, cast(value, m.d), m.c(0), m.d)


def _grid_sample(ctx: LoweringContext, x: TensorValue, grid: TensorValue, mode_code: int,
                 padding_code: int, align_corners: bool) -> TensorValue:
    nd = x.ndim - 2
    mode, padding = MODES.get(mode_code), PADDINGS.get(padding_code)
    if mode is None or padding is None or (mode == "bicubic" and nd != 2):
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       f"grid_sample with interpolation mode {mode_code} and "
                                       f"padding mode {padding_code} on {nd} spatial dims")
    if not x.dtype.is_floating:
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       f"grid_sample of {x.dtype.name}")
    for d in range(2, x.ndim):  # eager's check_grid_sampler_common, where a size may be 0
        ctx.require(sympy.Ne(x.sizes[d], 0, evaluate=False),
                    f"grid_sampler(): expected input to have non-empty spatial dimensions "
                    f"(dimension {d} is empty for these inputs)")
    stored = _stored_dtype(x)
    if not isinstance(x.body, Load):
        x = ctx.realize(x)
    # PyTorch's CPU kernels do a half input's coordinate and blend arithmetic in its own
    # precision, rounding at every step: so does this rule (each half-typed node rounds)
    m = _Math(stored)
    out = ctx.out_sizes
    iv = index_vars(len(out))
    # grid[n, *out_spatial, k] holds the k-th coordinate: k = 0 is the last (width) dim
    coords = [cast(grid.load((iv[0], *iv[2:], nd - 1 - k)), m.d) for k in range(nd)]
    sizes = x.sizes[2:]
    taps = _Taps(m, x, iv)
    unnorm = [_unnormalize(m, c, n, align_corners) for c, n in zip(coords, sizes)]
    if mode == "bicubic":
        return ctx.pointwise(_bicubic(m, taps, unnorm, sizes, padding, align_corners), out)
    pos = [_pad(m, p, n, padding, align_corners) for p, n in zip(unnorm, sizes)]
    if mode == "nearest":
        return ctx.pointwise(taps.at([Unary(UnaryOp.ROUND, p, m.d) for p in pos]), out)
    lo = [m.floor(p) for p in pos]
    hi = [m.add(v, m.c(1)) for v in lo]
    total: Node | None = None
    for corner in itertools.product((0, 1), repeat=nd):  # last dim fastest, as torch sums
        weight: Node | None = None
        # torch multiplies (height * width) in 2-D, (width * height * depth) in 3-D
        for k in (range(nd) if nd == 2 else reversed(range(nd))):
            side = corner[k]
            w = m.sub(hi[k], pos[k]) if side == 0 else m.sub(pos[k], lo[k])
            weight = w if weight is None else m.mul(weight, w)
        term = m.mul(taps.at([hi[k] if s else lo[k] for k, s in enumerate(corner)]), weight)
        total = term if total is None else m.add(total, term)
    assert total is not None
    return ctx.pointwise(total, out)


def _bicubic(m: _Math, taps: _Taps, unnorm: list[Node], sizes, padding: str,
             align_corners: bool) -> Node:
    """Sixteen taps around the unnormalized position, each tap's position padded on its own
    (torch's get_value_bounded), blended along the width, then the height."""
    y, x = unnorm
    y0, x0 = m.floor(y), m.floor(x)
    wy, wx = m.cubic(m.sub(y, y0)), m.cubic(m.sub(x, x0))
    total: Node | None = None
    for j in range(4):
        py = _pad(m, m.add(y0, m.c(j - 1)), sizes[0], padding, align_corners)
        row: Node | None = None
        for i in range(4):
            px = _pad(m, m.add(x0, m.c(i - 1)), sizes[1], padding, align_corners)
            term = m.mul(taps.at([m.trunc(py), m.trunc(px)]), wx[i])
            row = term if row is None else m.add(row, term)
        assert row is not None
        term = m.mul(row, wy[j])
        total = term if total is None else m.add(total, term)
    assert total is not None
    return total


def _stored_dtype(x: TensorValue) -> DType:
    """x's dtype before a half input was widened to float32 for the rule."""
    if isinstance(x.body, Cast) and x.body.x.dtype in (DType.float16, DType.bfloat16):
        return x.body.x.dtype
    return x.dtype


@register_lowering(aten.grid_sampler_2d.default, aten.grid_sampler_3d.default, family=FAMILY)
def lower_grid_sampler(ctx, x, grid, interpolation_mode, padding_mode, align_corners):
    return _grid_sample(ctx, x, grid, int(interpolation_mode), int(padding_mode),
                        bool(align_corners))
