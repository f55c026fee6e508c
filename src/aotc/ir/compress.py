"""Data-dependent sizes: a buffer whose leading dim is the number of positions a mask
selects (nonzero, boolean-mask indexing, masked_select), and its inverse, a write of
consecutive rows at the positions a mask selects (x[mask] = values, masked_scatter).

The count is an unbacked shape symbol bound before the run (a `Count` of the mask, so
outputs are allocated at their true size); the kernel then walks the mask in row-major
order and appends one block per selected position (codegen/cpp/templates/compress.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from .expr import BinaryOp, Node, loads
from .nodes import Template


@dataclass(frozen=True)
class Count:
    """How many positions r (r0, ..., r{n-1}) of `ranges` satisfy `mask` (a bool body over
    the reduction variables r*, reading inputs only)."""

    mask: Node
    ranges: tuple[sympy.Expr, ...]


@dataclass(frozen=True)
class Compress(Template):
    """Output [count, *inner]: for each position r of `ranges` (row-major) where `mask`
    holds, the next row is `value` over r* and the inner index i1, ..., i{len(inner)}.

    With `fill` the count is a fixed capacity (nonzero_static): rows past the selected
    positions hold `fill`, and positions past the capacity are dropped."""

    mask: Node
    ranges: tuple[sympy.Expr, ...]
    inner: tuple[sympy.Expr, ...]
    value: Node
    fill: Node | None = None

    def reads(self) -> tuple[str, ...]:
        names: dict[str, None] = {}
        for e in (self.mask, self.value) + (() if self.fill is None else (self.fill,)):
            for ld in loads(e):
                names[ld.buffer] = None
        return tuple(names)

    def describe(self) -> str:
        from .printer import format_expr, format_index

        rest = "" if self.fill is None else f", the rest {format_expr(self.fill)}"
        return (f"compress over ({format_index(self.ranges)}) where {format_expr(self.mask)}: "
                f"rows of ({format_index(self.inner)}) = {format_expr(self.value)}{rest}")


@dataclass(frozen=True)
class MaskedScatter(Template):
    """The inverse of Compress (`x[mask] = values`, masked_scatter): element (i...) is
    `init`; then for each position r of `ranges` (row-major, the output's leading dims)
    where `mask` holds, the next row of `value` (over i0, the row, and i1, ... of `inner`)
    is written at (r, inner) (combined with the old element by `combine`). `value` has
    `rows` rows: the selected count must equal it (`exact`, index_put) or not exceed it
    (masked_scatter), else the run reports an input error."""

    init: Node
    mask: Node
    ranges: tuple[sympy.Expr, ...]
    inner: tuple[sympy.Expr, ...]
    value: Node
    rows: sympy.Expr
    exact: bool = True
    combine: BinaryOp | None = None

    def reads(self) -> tuple[str, ...]:
        names: dict[str, None] = {}
        for e in (self.init, self.mask, self.value):
            for ld in loads(e):
                names[ld.buffer] = None
        return tuple(names)

    def describe(self) -> str:
        from .printer import format_expr, format_index

        verb = "=" if self.combine is None else f"{self.combine.value}="
        return (f"masked scatter from {format_expr(self.init)} over ({format_index(self.ranges)}) "
                f"where {format_expr(self.mask)}: next row (of {self.rows}) of "
                f"({format_index(self.inner)}) {verb} {format_expr(self.value)}")
