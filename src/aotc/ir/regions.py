"""Writes into regions: a buffer assembled from an initial value and ordered writes.

index_put (accumulate too), index_copy/index_add, scatter, slice_scatter, select_scatter
and every in-place update through a view lower to one RegionWrite; codegen is regions.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from .expr import BinaryOp, Load, Node, loads
from .nodes import Template


@dataclass(frozen=True)
class Write:
    """For every position (i0, ..., i{n-1}) of `sizes`, element `index` of the buffer
    becomes `value` (with `combine`: combine(element, value), ADD for index_put's
    accumulate and scatter_add, MUL for scatter's reduce="multiply").

    `index` uses the loop variables i* and, for data-dependent positions, `ind<j>`: the
    int64 value of `indirect[j]` at that position, counted from the end of its dim when
    negative with `wrap`, and reported as an input error outside [0, bounds[j]).
    A write with indirect positions runs its positions in row-major order, one after the
    other, so repeated positions resolve as PyTorch's CPU resolves them in deterministic
    mode (the last one wins, or each combines in turn; its default parallel path leaves
    the winner unspecified); a write without them must be injective and may run in
    parallel.
    """

    sizes: tuple[sympy.Expr, ...]
    index: tuple[sympy.Expr, ...]
    value: Node
    indirect: tuple[Node, ...] = ()
    bounds: tuple[sympy.Expr, ...] = ()
    combine: BinaryOp | None = None
    wrap: bool = True

    def __post_init__(self) -> None:
        if len(self.indirect) != len(self.bounds):
            raise ValueError("write: one bound per indirect position")

    @property
    def ordered(self) -> bool:
        """Whether positions may repeat, so the write runs them in order on one thread."""
        return bool(self.indirect) or self.combine is not None

    def nodes(self) -> tuple[Node, ...]:
        return (self.value, *self.indirect)


@dataclass(frozen=True)
class RegionWrite(Template):
    """Element (i...) is `init`, then each write in turn overwrites (or adds to) a region.

    Writes run in the order given; each sees the buffer as the writes before it left it.
    Bodies read other buffers only (never the one being written).
    """

    init: Node
    writes: tuple[Write, ...]

    def reads(self) -> tuple[str, ...]:
        names: dict[str, None] = {}
        for e in (self.init, *(n for w in self.writes for n in w.nodes())):
            for ld in loads(e):
                names[ld.buffer] = None
        return tuple(names)

    def in_place_source(self, own_sizes: tuple[sympy.Expr, ...]) -> str | None:
        """The buffer whose every element `init` copies unchanged, if it does (a write then
        updates that buffer's storage in place when nothing reads it afterwards)."""
        from .symbols import index_vars

        e = self.init
        if isinstance(e, Load) and e.index == index_vars(len(own_sizes)):
            return e.buffer
        return None

    def describe(self) -> str:
        from .printer import format_expr, format_index

        parts = [f"region write from {format_expr(self.init)}"]
        for w in self.writes:
            given = "".join(f", ind{j}={format_expr(v)} in [0, {b})"
                            for j, (v, b) in enumerate(zip(w.indirect, w.bounds)))
            verb = "=" if w.combine is None else f"{w.combine.value}="
            parts.append(f"[{format_index(w.index)}] {verb} {format_expr(w.value)} "
                         f"for i in ({format_index(w.sizes)}){given}")
        return "; ".join(parts)
