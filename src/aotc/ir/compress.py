"""Data-dependent sizes: a buffer whose leading dim is the number of positions a mask
selects (nonzero, boolean-mask indexing, masked_select).

The count is an unbacked shape symbol bound before the run (a `Count` of the mask, so
outputs are allocated at their true size); the kernel then walks the mask in row-major
order and appends one block per selected position (codegen/cpp/compress.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from .expr import Node, loads
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
    holds, the next row is `value` over r* and the inner index i1, ..., i{len(inner)}."""

    mask: Node
    ranges: tuple[sympy.Expr, ...]
    inner: tuple[sympy.Expr, ...]
    value: Node

    def reads(self) -> tuple[str, ...]:
        names: dict[str, None] = {}
        for e in (self.mask, self.value):
            for ld in loads(e):
                names[ld.buffer] = None
        return tuple(names)

    def describe(self) -> str:
        from .printer import format_expr, format_index

        return (f"compress over ({format_index(self.ranges)}) where {format_expr(self.mask)}: "
                f"rows of ({format_index(self.inner)}) = {format_expr(self.value)}")
