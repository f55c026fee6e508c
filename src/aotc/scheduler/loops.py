"""The loop plan: how each generated kernel loops, chosen here from the target's `Loops` and
the kernel's access patterns (scheduler/access.py): the axes and their splits, transposing
tiles, cut axes, vector lanes, column tiles, the OpenMP-parallel loops and the reduction
strategy. codegen/cpp/kernels.py prints a plan and decides nothing; the `loops` stage dumps
it. Kernels without loops of their own (template calls, compress walks) have no nest.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy

from ..dtypes import DType
from ..ir.expr import Node
from ..ir.nodes import ARG_REDUCTIONS, Buffer, Pointwise, Program, ReduceType, Reduction
from ..ir.regions import RegionWrite
from ..ir.symbols import flat_offset, index_vars, numel, reduction_var
from ..target import Loops, Target
from .access import (
    column_axis,
    merge_inner_axes,
    merge_reduced_axes,
    split_at_conditions,
    split_inner_axis,
    split_reduced_axis,
    split_vars,
    transpose_axes,
)
from .grouping import RowGroup, Scheduled


@dataclass(frozen=True)
class Parallel:
    """Loops shared among OpenMP threads: the outer `collapse` loops of a nest doing `work`
    (elements times reduction length), when it reaches `min_work` (tested at run time
    where `work` has symbols); `reduction`: one total accumulated across the threads."""

    collapse: int
    work: sympy.Expr
    min_work: int
    reduction: bool = False

    def describe(self) -> str:
        what = "a reduction across threads" if self.reduction else "parallel"
        when = "" if self.work.is_number else f" when {self.work} >= {self.min_work}"
        return f"{what}, collapse {self.collapse}{when} (work {self.work})"


@dataclass(frozen=True)
class Nest:
    """One kernel's loop schedule; `parallel`: its outer loops shared among threads."""

    parallel: Parallel | None

    def describe(self) -> list[str]:
        return [self.parallel.describe() if self.parallel else "one thread"]


@dataclass(frozen=True)
class PointwiseLoops(Nest):
    """out[offset] = body over `loops` (variable, size; a unit size is a constant 0), the
    innermost axis `split` as (axis, factor): v = factor*vo + vi, with the body rewritten."""

    loops: tuple[tuple[sympy.Symbol, sympy.Expr], ...]
    offset: sympy.Expr
    body: Node
    split: tuple[int, int] | None = None

    def describe(self) -> list[str]:
        head = "pointwise" + (f", axis {self.split[0]} split by {self.split[1]}" if self.split else "")
        return [head, *super().describe(), "loops: " + _loop_list(self.loops)]


@dataclass(frozen=True)
class TiledCopy(Nest):
    """A transposing copy: output axes a < b looped in `tile` x `tile` blocks."""

    axes: tuple[int, int]
    tile: int

    def describe(self) -> list[str]:
        a, b = self.axes
        return [f"tiled copy, axes {a} and {b} in {self.tile} x {self.tile} blocks",
                *super().describe()]


@dataclass(frozen=True)
class CutAxis(Nest):
    """The innermost axis in `pieces` (lo, hi, body for that range) where every comparison
    on it is settled: each piece reads one input of a cat contiguously."""

    axis: int
    pieces: tuple[tuple[int, int, Node], ...]

    def describe(self) -> list[str]:
        cuts = ", ".join(f"[{lo}, {hi})" for lo, hi, _ in self.pieces)
        return [f"axis {self.axis} cut into {cuts}", *super().describe()]


@dataclass(frozen=True)
class ColumnReduction(Nest):
    """A reduction vectorized along output axis `axis`: `width` outputs accumulate side by
    side while the reduced axes are walked (`one_tile`: the whole axis is one tile)."""

    axis: int
    width: int
    one_tile: bool

    def describe(self) -> list[str]:
        tiles = "one tile" if self.one_tile else f"tiles of {self.width}"
        return [f"column reduction along axis {self.axis}, {tiles}", *super().describe()]


@dataclass(frozen=True)
class LaneReduction(Nest):
    """Per output, the reduced axes with the innermost in `lanes` independent accumulators
    over blocks of `block` elements; `reduction` as looped (trailing reduced axes merged,
    read through `offset_form`, when they are one contiguous run)."""

    lanes: int
    block: int
    reduction: Reduction
    offset_form: tuple[dict, dict] | None = None

    def describe(self) -> list[str]:
        merged = ", reduced axes merged" if self.offset_form is not None else ""
        return [f"lane reduction, {self.lanes} lanes, blocks of {self.block}{merged} "
                f"(ranges {list(self.reduction.ranges)})", *super().describe()]


@dataclass(frozen=True)
class WholeReduction(Nest):
    """One total per output, accumulated in one chain; `inner`: the reduced loops split
    across threads (one output, so the outer loops cannot be)."""

    inner: Parallel | None

    def describe(self) -> list[str]:
        inner = [f"reduced loops: {self.inner.describe()}"] if self.inner else []
        return ["whole reduction", *super().describe(), *inner]


@dataclass(frozen=True)
class ArgReduction(Nest):
    """argmax/argmin: the reduced axes in order, keeping the first best position."""

    def describe(self) -> list[str]:
        return ["arg reduction", *super().describe()]


@dataclass(frozen=True)
class RowLoops(Nest):
    """A row group: the outer axes, then each member along the row; members that reduce use
    `lanes` accumulators over blocks of `block` elements."""

    lanes: int
    block: int

    def describe(self) -> list[str]:
        return [f"rows, {self.lanes} lanes, blocks of {self.block}", *super().describe()]


@dataclass(frozen=True)
class RegionLoops(Nest):
    """A region write: the initial copy (`parallel`), then each write in order, parallel
    (`writes[k]`) where its positions cannot repeat."""

    writes: tuple[Parallel | None, ...]

    def describe(self) -> list[str]:
        lines = [f"initial copy: {super().describe()[0]}"]
        lines += [f"write {k}: {p.describe() if p else 'one thread, in order'}"
                  for k, p in enumerate(self.writes)]
        return ["region writes", *lines]


@dataclass(frozen=True)
class LoopPlan:
    """Each generated kernel's nest, by the name of its schedule item."""

    nests: dict[str, Nest]


def plan_loops(program: Program, schedule: list[Scheduled], target: Target) -> LoopPlan:
    sizes = {name: b.sizes for name, b in program.buffers.items()}
    nests: dict[str, Nest] = {}
    for item in schedule:
        if isinstance(item, RowGroup):
            nests[item.name] = _rows(item, target.loops)
            continue
        plan = _PLANNERS.get(type(item.op))
        if plan is not None:
            nests[item.name] = plan(item, sizes, target.loops)
    return LoopPlan(nests)


def format_loop_plan(plan: LoopPlan) -> str:
    if not plan.nests:
        return "no generated loop nests (every kernel calls a template)\n"
    lines = []
    for name, nest in plan.nests.items():
        first, *rest = nest.describe()
        lines.append(f"{name}: {first}")
        lines += [f"  {line}" for line in rest]
    return "\n".join(lines) + "\n"


def parallel_for(work, collapse: int, loops: Loops, reduction: bool = False) -> Parallel | None:
    """The parallel loops of a nest doing `work`, or None when it is surely too small."""
    work = sympy.sympify(work)
    if work.is_number and work < loops.parallel_min_work:
        return None
    return Parallel(collapse, work, loops.parallel_min_work, reduction)


def _outer(sizes, work, collapse: int, loops: Loops) -> Parallel | None:
    """Parallel over the non-unit loops among `sizes` (at most `collapse` of them)."""
    n = sum(1 for s in sizes if s != 1)
    return parallel_for(work, min(collapse, n), loops) if n else None


def _pointwise(buf: Buffer, sizes_of: dict, loops: Loops) -> Nest:
    op = buf.op
    assert isinstance(op, Pointwise)
    sizes = buf.sizes
    iv = index_vars(len(sizes))
    off = flat_offset(iv, sizes)
    work = numel(sizes)
    split = split_inner_axis(op.body, iv, sizes)
    if split is not None:  # the innermost axis as (outer, inner) loops: see split_inner_axis
        k, c, body = split
        outer, inner = split_vars(iv[k])
        loop_vars, loop_sizes = list(iv), list(sizes)
        loop_vars[k:k + 1] = [outer, inner]
        loop_sizes[k:k + 1] = [sympy.cancel(sizes[k] / c), c]
        n_loops = sum(1 for n in loop_sizes if n != 1)
        return PointwiseLoops(_outer(loop_sizes, work, max(n_loops - 1, 1), loops),
                              tuple(zip(loop_vars, loop_sizes)),
                              sympy.expand(off.xreplace({iv[k]: c * outer + inner})), body,
                              (k, int(c)))
    n_loops = sum(1 for n in sizes if n != 1)
    tiles = transpose_axes(op.body, iv, sizes, sizes_of)
    if tiles is not None:
        a, b = tiles
        others = sum(1 for k, n in enumerate(sizes) if k not in tiles and n != 1)
        return TiledCopy(parallel_for(work, others + 2, loops), (a, b), loops.tile)
    pieces = split_at_conditions(op.body, iv, sizes)
    if pieces is not None:  # the innermost axis in ranges where its comparisons are settled
        k = max(a for a, n in enumerate(sizes) if n != 1)
        rest = [n for a, n in enumerate(sizes) if a != k]  # after k: unit
        return CutAxis(_outer(rest, work, max(n_loops - 1, 1), loops), k, tuple(pieces))
    body, loop_sizes = op.body, list(sizes)
    while (merged := merge_inner_axes(body, iv, loop_sizes, sizes_of)) is not None:
        loop_sizes, body = merged  # two inner axes as one longer vector loop
    if body is not op.body:
        n_loops = sum(1 for n in loop_sizes if n != 1)
        off = flat_offset(iv, sizes).xreplace({v: 0 for v, n, m in zip(iv, sizes, loop_sizes)
                                               if m == 1 and n != 1})
    return PointwiseLoops(_outer(loop_sizes, work, max(n_loops - 1, 1), loops),
                          tuple(zip(iv, loop_sizes)), off, body)


def _reduction(buf: Buffer, sizes_of: dict, loops: Loops) -> Nest:
    op = buf.op
    assert isinstance(op, Reduction)
    sizes = buf.sizes
    rv = [reduction_var(k) for k in range(len(op.ranges))]
    work = sympy.expand(numel(sizes) * numel(op.ranges))
    inner = column_axis(op, sizes, rv, sizes_of, loops)
    if inner is not None:
        n = sizes[inner]
        rest = sum(1 for k, m in enumerate(sizes) if k != inner and m != 1)
        one_tile = bool(n.is_number and int(n) <= loops.columns)
        par = (parallel_for(work, rest + (0 if one_tile else 1), loops)
               if rest or not one_tile else None)
        return ColumnReduction(par, inner, int(n) if one_tile else loops.columns, one_tile)
    outer = _outer(sizes, work, len(sizes), loops)
    if op.reduce_type in ARG_REDUCTIONS:
        return ArgReduction(outer)
    opened = sum(1 for s in sizes if s != 1)
    across = has_thread_reduction(op, buf.dtype)
    if not rv or (opened == 0 and across):  # one output: split it across threads
        return WholeReduction(outer, parallel_for(work, len(rv), loops, True)
                              if rv and across else None)
    op = split_reduced_axis(op, buf.dtype) or op
    merged = merge_reduced_axes(op, sizes_of)
    if merged is not None:  # the trailing reduced axes as one run of elements
        return LaneReduction(outer, loops.lanes, loops.block, *merged)
    return LaneReduction(outer, loops.lanes, loops.block, op)


def has_thread_reduction(op: Reduction, stored: DType) -> bool:
    """Whether OpenMP's reduction clause can combine per-thread totals of `op` (not for a
    floating max/min, whose NaN rule it lacks, nor for an arg reduction)."""
    d = stored.compute
    if op.reduce_type in ARG_REDUCTIONS:
        return False
    if op.reduce_type in (ReduceType.SUM, ReduceType.PROD, ReduceType.ANY, ReduceType.ALL):
        return True
    return d is DType.bool or not d.is_floating


def _rows(group: RowGroup, loops: Loops) -> Nest:
    k = len(group.outer)
    work = sympy.expand(numel(group.outer) * group.row)
    return RowLoops(_outer(group.outer, work, k, loops), loops.lanes, loops.block)


def _regions(buf: Buffer, sizes_of: dict, loops: Loops) -> Nest:
    op = buf.op
    assert isinstance(op, RegionWrite)

    def loop(sizes, parallel: bool) -> Parallel | None:
        n = sum(1 for s in sizes if s != 1)
        return parallel_for(numel(sizes), max(n, 1), loops) if parallel and n else None

    return RegionLoops(loop(buf.sizes, True),
                       tuple(loop(w.sizes, not w.ordered) for w in op.writes))


def _loop_list(loops) -> str:
    return ", ".join(f"{v} < {n}" for v, n in loops)


_PLANNERS: dict[type, Callable[[Buffer, dict, Loops], Nest]] = {
    Pointwise: _pointwise, Reduction: _reduction, RegionWrite: _regions}
