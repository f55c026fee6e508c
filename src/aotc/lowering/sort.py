"""Sorting: sort, argsort, msort, topk, kthvalue, median, nanmedian and mode as slices of one
ArgSort template (the positions of each line in sorted order, or the one position the op
picks) plus a gather of the values; searchsorted and
bucketize as the SearchSorted template. Ops returning (values, indices) keep that pair."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import Constant, IndexValue, cast
from ..ir.nodes import ArgSort, SearchSorted, SortAlgorithm
from ..ir.symbols import index_vars, numel
from .common import dim_index
from .context import LoweringContext, TensorValue
from .indexing import read_indirect
from .reduction import op_name, require_nonempty
from .registry import register_lowering
from .views import remap, reshape_index

aten = torch.ops.aten
FAMILY = "sort"


def _contiguous(ctx: LoweringContext, x: TensorValue) -> str:
    name = ctx.realize(x).buffer_name()
    assert name is not None
    return name


def positions(ctx: LoweringContext, x: TensorValue, dim: int, first, count, descending: bool,
              algorithm: SortAlgorithm) -> TensorValue:
    """int64 positions along `dim` of the sorted elements [first, first + count) of each line."""
    if x.ndim == 0:  # one element: it is its own first
        return ctx.pointwise(IndexValue(sympy.Integer(0), DType.int64), ())
    dim = dim_index(dim, x.ndim)
    s = x.sizes
    op = ArgSort(_contiguous(ctx, x), x.dtype, numel(s[:dim]), s[dim], numel(s[dim + 1:]),
                 sympy.sympify(first), sympy.sympify(count), descending, algorithm)
    return ctx.emit(op, s[:dim] + (sympy.sympify(count),) + s[dim + 1:], DType.int64,
                    hint=f"{ctx.node_name}_positions")


def gather_along(ctx: LoweringContext, x: TensorValue, dim: int, pos: TensorValue) -> TensorValue:
    """x gathered at `pos` along `dim` (pos has x's shape but for `dim`)."""
    if x.ndim == 0:
        return ctx.realize(x)
    dim = dim_index(dim, x.ndim)
    iv = index_vars(pos.ndim)
    src = [None if k == dim else iv[k] for k in range(x.ndim)]
    return read_indirect(ctx, x, src, [cast(pos.load(iv), DType.int64)], sizes=pos.sizes)


def _drop(value: TensorValue, dim: int) -> TensorValue:
    """`value` without its unit dim `dim` (a view)."""
    if value.ndim == 0:
        return value
    sizes = value.sizes[:dim] + value.sizes[dim + 1:]
    iv = index_vars(len(sizes))
    return TensorValue(sizes, value.dtype, value.load(iv[:dim] + (0,) + iv[dim:]))


def _sort_algorithm(stable) -> SortAlgorithm:
    return SortAlgorithm.STABLE if stable else SortAlgorithm.UNSTABLE


@register_lowering(aten.sort.default, aten.sort.stable, family=FAMILY)
def lower_sort(ctx, x, *args, stable=None, dim=-1, descending=False):
    if args:  # sort.default(x, dim, descending): positional
        dim = args[0]
        descending = args[1] if len(args) > 1 else descending
    n = x.sizes[dim_index(dim, x.ndim)] if x.ndim else 1
    pos = positions(ctx, x, dim, 0, n, bool(descending), _sort_algorithm(stable))
    return gather_along(ctx, x, dim, pos), pos


@register_lowering(aten.argsort.default, aten.argsort.stable, family=FAMILY)
def lower_argsort(ctx, x, *args, stable=None, dim=-1, descending=False):
    if args:
        dim = args[0]
        descending = args[1] if len(args) > 1 else descending
    n = x.sizes[dim_index(dim, x.ndim)] if x.ndim else 1
    return positions(ctx, x, dim, 0, n, bool(descending), _sort_algorithm(stable))


@register_lowering(aten.msort.default, family=FAMILY)
def lower_msort(ctx, x):
    return lower_sort(ctx, x, 0)[0]


@register_lowering(aten.topk.default, family=FAMILY)
def lower_topk(ctx, x, k, dim=-1, largest=True, sorted=True):
    algorithm = SortAlgorithm.TOPK if sorted else SortAlgorithm.TOPK_UNSORTED
    _require_k(ctx, x, dim, k, "index")
    pos = positions(ctx, x, dim, 0, k, bool(largest), algorithm)
    return gather_along(ctx, x, dim, pos), pos


def _one_per_line(ctx: LoweringContext, x: TensorValue, dim, keepdim, first,
                  algorithm: SortAlgorithm) -> tuple[TensorValue, TensorValue]:
    """(values, indices) of the one element per line that `algorithm` picks."""
    pos = positions(ctx, x, dim, first, 1, False, algorithm)
    values = gather_along(ctx, x, dim, pos)
    if keepdim or x.ndim == 0:
        return values, pos
    d = dim_index(dim, x.ndim)
    return _drop(values, d), _drop(pos, d)


def _require_k(ctx: LoweringContext, x: TensorValue, dim, k, what: str) -> None:
    """Eager refuses k past the dim's size (topk, kthvalue): so does the run, where a
    dynamic size may be smaller."""
    if x.ndim:
        d = dim_index(dim, x.ndim)
        ctx.require(sympy.Ge(x.sizes[d], k, evaluate=False),
                    f"{op_name(ctx)}(): selected {what} k={k} out of range for dimension {d} "
                    "(it has fewer elements for these inputs)")


@register_lowering(aten.kthvalue.default, family=FAMILY)
def lower_kthvalue(ctx, x, k, dim=-1, keepdim=False):
    _require_k(ctx, x, dim, k, "number")
    return _one_per_line(ctx, x, dim, keepdim, k - 1, SortAlgorithm.SELECT)


@register_lowering(aten.median.dim, family=FAMILY)
def lower_median_dim(ctx, x, dim, keepdim=False):
    require_nonempty(ctx, x, dim)
    return _one_per_line(ctx, x, dim, keepdim, 0, SortAlgorithm.MEDIAN)


@register_lowering(aten.nanmedian.dim, family=FAMILY)
def lower_nanmedian_dim(ctx, x, dim, keepdim=False):
    require_nonempty(ctx, x, dim)
    return _one_per_line(ctx, x, dim, keepdim, 0, SortAlgorithm.NANMEDIAN)


@register_lowering(aten.mode.default, family=FAMILY)
def lower_mode(ctx, x, dim=-1, keepdim=False):
    require_nonempty(ctx, x, dim)
    return _one_per_line(ctx, x, dim, keepdim, 0, SortAlgorithm.MODE)


def _median_of_all(ctx: LoweringContext, x: TensorValue, algorithm: SortAlgorithm):
    """The median of every element: one line of the flattened tensor, a 0-dim value."""
    if x.ndim == 0:
        return ctx.realize(x)
    n = (numel(x.sizes),)
    flat = remap(x, n, reshape_index(x.sizes, n))
    return _one_per_line(ctx, flat, 0, False, 0, algorithm)[0]


@register_lowering(aten.median.default, family=FAMILY)
def lower_median(ctx, x):
    return _median_of_all(ctx, x, SortAlgorithm.MEDIAN)


@register_lowering(aten.nanmedian.default, family=FAMILY)
def lower_nanmedian(ctx, x):
    return _median_of_all(ctx, x, SortAlgorithm.NANMEDIAN)


def search_sorted(ctx: LoweringContext, boundaries: TensorValue, values: TensorValue,
                  out_int32: bool, right: bool, sorter) -> TensorValue:
    """Each value's position among the sorted boundaries (a SearchSorted template)."""
    if sorter is not None:  # search the boundaries in the order the sorter gives them
        boundaries = gather_along(ctx, boundaries, -1, sorter)
    if boundaries.dtype is not values.dtype:
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       "boundaries and values of different dtypes")
    b_sizes, v_sizes = boundaries.sizes, values.sizes
    lines = numel(b_sizes[:-1]) if b_sizes else sympy.Integer(1)
    n = b_sizes[-1] if b_sizes else sympy.Integer(1)
    if len(b_sizes) <= 1:
        rows, per_row = sympy.Integer(1), numel(v_sizes)
    else:
        rows, per_row = numel(v_sizes[:-1]), v_sizes[-1]
    op = SearchSorted(_contiguous(ctx, boundaries), _contiguous(ctx, values), boundaries.dtype,
                      lines, n, rows, per_row, bool(right))
    found = ctx.emit(op, v_sizes, DType.int64)
    return ctx.pointwise(cast(found.body, DType.int32), v_sizes) if out_int32 else found


@register_lowering(aten.searchsorted.Tensor, family=FAMILY)
def lower_searchsorted(ctx, sorted_sequence, x, *, out_int32=False, right=False, side=None,
                       sorter=None):
    return search_sorted(ctx, sorted_sequence, x, out_int32, bool(right) or side == "right",
                         sorter)


@register_lowering(aten.bucketize.Tensor, family=FAMILY)
def lower_bucketize(ctx, x, boundaries, *, out_int32=False, right=False):
    return search_sorted(ctx, boundaries, x, out_int32, bool(right), None)


@register_lowering(aten.searchsorted.Scalar, family=FAMILY)
def lower_searchsorted_scalar(ctx, sorted_sequence, value, *, out_int32=False, right=False,
                              side=None, sorter=None):
    """A Python number searched in the sequence: a one-element tensor of its dtype."""
    scalar = ctx.pointwise(Constant(value, sorted_sequence.dtype), ())
    return search_sorted(ctx, sorted_sequence, scalar, out_int32,
                         bool(right) or side == "right", sorter)
