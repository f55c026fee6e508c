"""unique and unique_consecutive (dim=None): data-dependent sizes built from the shipped
templates. The flattened input is sorted (ArgSort, stable) unless consecutive; a position
starts a group where it differs from the one before (NaN differs from everything, as in
PyTorch); the values and the group starts are Compress outputs whose count (the number of
groups) binds once the group starts are known (ir/binding.py); the inverse is each group's
number (a cumsum) read back in input order (the inverse permutation is an argsort of the
sort's positions); a group's count is the distance to the next group's start."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import (
    Binary,
    BinaryOp,
    Constant,
    IndexValue,
    Load,
    Where,
    cast,
    constant,
)
from ..ir.nodes import ReduceType, ScanOp, SortAlgorithm
from ..ir.symbols import index_var, index_vars, numel
from .common import dim_index
from .compress import compress
from .context import LoweringContext, TensorValue
from .reduction import reduce
from .registry import register_lowering
from .scan import scan
from .sort import gather_along, positions
from .views import reshape_index

aten = torch.ops.aten
FAMILY = "compress"


@register_lowering(aten._unique2.default, family=FAMILY)
def lower_unique2(ctx, x, sorted=True, return_inverse=False, return_counts=False):
    """torch.unique(x): PyTorch's CPU kernel returns sorted values either way."""
    return _unique(ctx, x, True, return_inverse, return_counts)


@register_lowering(aten._unique.default, family=FAMILY)
def lower_unique(ctx, x, sorted=True, return_inverse=False):
    return _unique(ctx, x, True, return_inverse, False)[:2]


@register_lowering(aten.unique_consecutive.default, family=FAMILY)
def lower_unique_consecutive(ctx, x, return_inverse=False, return_counts=False, dim=None):
    if dim is not None:
        return _unique_slices(ctx, x, dim, False, return_inverse, return_counts)
    return _unique(ctx, x, False, return_inverse, return_counts)


@register_lowering(aten.unique_dim.default, family=FAMILY)
def lower_unique_dim(ctx, x, dim, sorted=True, return_inverse=False, return_counts=False):
    """Unique slices along `dim`, sorted lexicographically (PyTorch sorts either way)."""
    return _unique_slices(ctx, x, dim, True, return_inverse, return_counts)


# lexicographic order of slices: one stable argsort per element of a slice, last first
MAX_SORTED_SLICE = 64


def _unique_slices(ctx: LoweringContext, x: TensorValue, dim: int, sort: bool,
                   return_inverse: bool, return_counts: bool) -> tuple:
    """Groups of equal consecutive slices along `dim` (after a lexicographic sort of the
    slices with `sort`): the slice sorted by each of its elements in turn, last first, with
    a stable argsort, is in lexicographic order."""
    d = dim_index(dim, x.ndim)
    n = x.sizes[d]
    rest = tuple(x.sizes[:d] + x.sizes[d + 1:])
    m = numel(rest)
    iv = index_vars(1 + len(rest))
    src = list(iv[1:d + 1]) + [iv[0]] + list(iv[d + 1:])
    moved = TensorValue((n, *rest), x.dtype, x.load(src))  # the slices along dim 0
    rows = TensorValue((n, m), x.dtype, moved.load(reshape_index((n, *rest), (n, m))))
    i0, i1 = index_var(0), index_var(1)
    perm = None
    if sort:
        if not (sympy.sympify(m).is_Integer and 0 < int(m) <= MAX_SORTED_SLICE):
            raise UnsupportedOperatorError(ctx.target, ctx.source, "unique over a dim sorts "
                                           f"slices of at most {MAX_SORTED_SLICE} elements "
                                           f"(of a static size); these have {m}")
        for k in reversed(range(int(m))):
            column = TensorValue((n,), x.dtype, rows.load((i0, k)))
            if perm is not None:
                column = gather_along(ctx, column, 0, perm)
            step = positions(ctx, column, 0, 0, n, False, SortAlgorithm.STABLE)
            perm = step if perm is None else ctx.realize(gather_along(ctx, perm, 0, step))
        assert perm is not None
        index = perm
        wide = TensorValue((n, *rest), DType.int64, index.load((i0,)))
        moved = ctx.realize(gather_along(ctx, moved, 0, wide))
        rows = TensorValue((n, m), x.dtype, moved.load(reshape_index((n, *rest), (n, m))))
    else:
        moved = ctx.realize(moved)
        rows = TensorValue((n, m), x.dtype, moved.load(reshape_index((n, *rest), (n, m))))
    differs = TensorValue((n, m), DType.bool, Binary(
        BinaryOp.NE, rows.load((i0, i1)), rows.load((sympy.Max(i0 - 1, 0), i1)), DType.bool))
    changed = reduce(ctx, differs, [1], False, ReduceType.ANY, DType.bool)
    first = Binary(BinaryOp.EQ, IndexValue(i0, DType.int64), constant(0, DType.int64), DType.bool)
    is_new = ctx.pointwise(Binary(BinaryOp.OR, first, changed.body, DType.bool), (n,),
                           hint=f"{ctx.node_name}_new")
    count = ctx.outputs[0][0][d] if ctx.outputs and ctx.outputs[0] else ctx.out_sizes[d]
    picked = compress(ctx, is_new, rest, lambda rv, jv: moved.load((rv[0], *jv)),
                      "unique", count, x.dtype)
    ov = index_vars(x.ndim)  # the selected slices back along `dim`
    back = [ov[d]] + list(ov[:d]) + list(ov[d + 1:])
    sizes = tuple(x.sizes[:d]) + (count,) + tuple(x.sizes[d + 1:])
    values = picked if d == 0 else ctx.realize(TensorValue(sizes, x.dtype, picked.load(back)))
    inverse = _inverse(ctx, is_new, n, perm, (n,)) if return_inverse else _empty(ctx, 1)
    counts = _counts(ctx, is_new, n, count) if return_counts else _empty(ctx, 2)
    return values, inverse, counts


def _unique(ctx: LoweringContext, x: TensorValue, sort: bool, return_inverse: bool,
            return_counts: bool) -> tuple:
    n = numel(x.sizes)
    i0 = index_var(0)
    flat = TensorValue((n,), x.dtype, x.load(reshape_index(x.sizes, (n,))) if x.ndim else
                       x.load(()))
    pos = None
    if sort:
        pos = positions(ctx, flat, 0, 0, n, False, SortAlgorithm.STABLE)
        ordered = ctx.realize(gather_along(ctx, flat, 0, pos))
    else:
        ordered = ctx.realize(flat)
    before = ordered.load((sympy.Max(i0 - 1, 0),))
    starts_group = Binary(BinaryOp.OR, Binary(BinaryOp.EQ, IndexValue(i0, DType.int64),
                                              constant(0, DType.int64), DType.bool),
                          Binary(BinaryOp.NE, ordered.load((i0,)), before, DType.bool), DType.bool)
    is_new = ctx.pointwise(starts_group, (n,), hint=f"{ctx.node_name}_new")
    count = ctx.outputs[0][0][0] if ctx.outputs and ctx.outputs[0] else ctx.out_sizes[0]
    values = compress(ctx, is_new, (), lambda rv, iv: ordered.load((rv[0],)), "unique", count,
                      x.dtype)
    inverse = _inverse(ctx, is_new, n, pos, x.sizes) if return_inverse else _empty(ctx, 1)
    counts = _counts(ctx, is_new, n, count) if return_counts else _empty(ctx, 2)
    return values, inverse, counts


def _inverse(ctx: LoweringContext, is_new: TensorValue, n, perm, sizes) -> TensorValue:
    """Each input position's group number (shaped `sizes`): a cumsum of the group starts,
    read back in input order through the inverse of the sort's permutation `perm`."""
    group = scan(ctx, TensorValue((n,), DType.int64, cast(is_new.body, DType.int64)), 0,
                 ScanOp.SUM, DType.int64)
    number = TensorValue((n,), DType.int64, Binary(BinaryOp.SUB, group.body,
                                                   constant(1, DType.int64), DType.int64))
    if perm is not None:  # where each input position went
        back = positions(ctx, perm, 0, 0, n, False, SortAlgorithm.STABLE)
        number = gather_along(ctx, number, 0, back)
    return ctx.realize(TensorValue(tuple(sizes), DType.int64, number.load((_flat_index(sizes),))))


def _counts(ctx: LoweringContext, is_new: TensorValue, n, count) -> TensorValue:
    """Each group's size: the distance from its start to the next group's (or the end)."""
    i0 = index_var(0)
    start = compress(ctx, is_new, (), lambda rv, iv: IndexValue(rv[0], DType.int64),
                     "unique", count, DType.int64)
    name = start.buffer_name()
    assert name is not None
    after = sympy.Min(i0 + 1, sympy.Max(count - 1, 0))
    end = Where(Binary(BinaryOp.LT, IndexValue(i0 + 1, DType.int64),
                       IndexValue(count, DType.int64), DType.bool),
                Load(name, (after,), DType.int64), IndexValue(n, DType.int64), DType.int64)
    return ctx.pointwise(Binary(BinaryOp.SUB, end, start.body, DType.int64), (count,),
                         hint=f"{ctx.node_name}_counts")


def _flat_index(sizes) -> sympy.Expr:
    """The row-major offset of the output index (i0, ..., i{n-1}) over `sizes`."""
    from ..ir.symbols import flat_offset

    return flat_offset(index_vars(len(sizes)), tuple(sizes)) if sizes else sympy.Integer(0)


def _empty(ctx: LoweringContext, k: int) -> TensorValue:
    """An output the call did not ask for: an empty int64 tensor, as PyTorch returns."""
    out = ctx.outputs[k] if len(ctx.outputs) > k else None
    sizes = out[0] if out is not None else (0,)
    return ctx.pointwise(Constant(0, DType.int64), sizes, hint=f"{ctx.node_name}_unused{k}")
