"""Writes into regions: index_put (accumulate too), put, index_copy, index_add, index_reduce,
scatter, scatter_add, scatter_reduce, slice_scatter, select_scatter and as_strided_scatter,
each one RegionWrite (ir/regions.py) of a copy of its input. Reads through indices are
indexing.py."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.compress import MaskedScatter
from ..ir.expr import Binary, BinaryOp, Node, Where, cast, constant, indirect_var
from ..ir.regions import RegionWrite, Write
from ..ir.symbols import index_vars, numel, reduction_var, surely_at_least
from .common import broadcast_index, broadcast_shapes, dim_index, operand
from .context import LoweringContext, TensorValue
from .registry import register_lowering
from .views import diagonal_index, reshape_index

aten = torch.ops.aten
FAMILY = "scatter"


def write_regions(ctx: LoweringContext, x: TensorValue, writes) -> TensorValue:
    """x with `writes` applied in order, as a new buffer."""
    return ctx.emit(RegionWrite(x.body, tuple(writes)), x.sizes, x.dtype)


def _integer_index(ctx, t: TensorValue) -> TensorValue:
    if t.dtype.is_floating or t.dtype is DType.bool:
        raise UnsupportedOperatorError(ctx.target, ctx.source, "indices must be integers")
    return t


def _read_at(t: TensorValue, shape, vars_) -> Node:
    """`t` broadcast to `shape`, read at loop variables `vars_`, as int64."""
    idx = broadcast_index(t.sizes, shape)
    mapping = dict(zip(index_vars(len(shape)), vars_))
    return cast(t.load(tuple(sympy.sympify(i).xreplace(mapping) for i in idx)), DType.int64)


@register_lowering(aten.index_put.default, aten._unsafe_index_put.default, family=FAMILY)
def lower_index_put(ctx, x: TensorValue, indices, values: TensorValue, accumulate=False):
    """x[indices] = values (or +=): the positions of x[indices], in the order x[indices]
    lists them, written one after the other."""
    indices = list(indices) + [None] * (x.ndim - len(indices))
    masks = [t for t in indices if t is not None and t.dtype in (DType.bool, DType.uint8)]
    if masks:
        return _masked_put(ctx, x, indices, values, accumulate)
    pos = [k for k, t in enumerate(indices) if t is not None]
    if not pos:
        return ctx.pointwise(operand(values, x.dtype, x.sizes), x.sizes)
    for k in pos:
        _integer_index(ctx, indices[k])
    bshape = broadcast_shapes(*(indices[k].sizes for k in pos))
    nb = len(bshape)
    adjacent = pos == list(range(pos[0], pos[-1] + 1))
    first = pos[0] if adjacent else 0
    plain = [k for k in range(x.ndim) if indices[k] is None]
    if adjacent:
        shape = x.sizes[:first] + bshape + x.sizes[pos[-1] + 1:]
    else:
        shape = bshape + tuple(x.sizes[k] for k in plain)
    iv = index_vars(len(shape))
    bvars = iv[first:first + nb]
    rest = iter(iv[:first] + iv[first + nb:])
    index: list = []
    indirect: list[Node] = []
    bounds: list = []
    for k, t in enumerate(indices):
        if t is None:
            index.append(next(rest))
        else:
            index.append(indirect_var(len(indirect)))
            indirect.append(_read_at(t, bshape, bvars))
            bounds.append(x.sizes[k])
    write = Write(tuple(shape), tuple(index), operand(values, x.dtype, shape), tuple(indirect),
                  tuple(bounds), BinaryOp.ADD if accumulate else None, wrap=True)
    return write_regions(ctx, x, [write])


def _masked_put(ctx, x: TensorValue, indices, values: TensorValue, accumulate) -> TensorValue:
    """x[mask] = values with the mask over dims [lead, lead + mask.ndim): the k-th selected
    position (row-major) takes row k of `values` ([count, *inner], broadcast over inner).
    Values with one row for every position are a select per element; otherwise a
    MaskedScatter walks the mask (the mask over the leading dims)."""
    lead = 0
    while lead < len(indices) and indices[lead] is None:
        lead += 1
    mask = indices[lead]
    others = [t for k, t in enumerate(indices) if t is not None and k != lead]
    fits = tuple(x.sizes[lead:lead + mask.ndim]) == tuple(mask.sizes)
    if others or not fits:
        raise UnsupportedOperatorError(ctx.target, ctx.source, "a boolean-mask update takes one "
                                       "mask over consecutive dims (not mixed with integer "
                                       "indices)")
    inner = tuple(x.sizes[lead + mask.ndim:])
    rows_given = values.ndim == len(inner) + 1 and values.sizes[0] != 1
    combine = BinaryOp.ADD if accumulate else None
    if not rows_given:  # the same values at every selected position: a select per element
        iv = index_vars(x.ndim)
        cond = cast(mask.load(iv[lead:lead + mask.ndim]), DType.bool)
        if all(d == 1 for d in values.sizes):
            v = cast(values.load((0,) * values.ndim), x.dtype)
        else:
            vals = values if values.ndim <= len(inner) else TensorValue(
                values.sizes[1:], values.dtype, values.load((0,) + index_vars(values.ndim - 1)))
            v = cast(vals.load(_tail_index(vals.sizes, iv[lead + mask.ndim:], inner)), x.dtype)
        old = x.body
        new = Binary(BinaryOp.ADD, old, v, x.dtype) if accumulate else v
        return ctx.pointwise(Where(cond, new, old, x.dtype), x.sizes)
    if lead != 0:
        raise UnsupportedOperatorError(ctx.target, ctx.source, "a boolean-mask update with one "
                                       "row of values per selected position takes the mask over "
                                       "the leading dims")
    rv = tuple(reduction_var(k) for k in range(mask.ndim))
    row_sizes = (values.sizes[0], *inner)
    value = cast(values.load(broadcast_index(values.sizes, row_sizes)), x.dtype)
    op = MaskedScatter(x.body, cast(mask.load(rv), DType.bool), tuple(mask.sizes), inner,
                       value, values.sizes[0], True, combine)
    return ctx.emit(op, x.sizes, x.dtype)


def _tail_index(sizes, vars_, inner) -> tuple:
    """Index into a tensor broadcast against the trailing dims `inner`, at `vars_`."""
    idx = broadcast_index(sizes, inner)
    mapping = dict(zip(index_vars(len(inner)), vars_))
    return tuple(sympy.sympify(i).xreplace(mapping) for i in idx)


@register_lowering(aten.masked_scatter.default, family=FAMILY)
def lower_masked_scatter(ctx, x: TensorValue, mask: TensorValue, source: TensorValue):
    """The positions where the mask (broadcast to x) holds take source's elements in
    order; source may hold more than the mask selects."""
    shape = broadcast_shapes(x.sizes, mask.sizes)  # the result broadcasts x and the mask
    rv = tuple(reduction_var(k) for k in range(len(shape)))
    cond = cast(mask.load(_tail_index(mask.sizes, rv, shape)), DType.bool)
    n = numel(source.sizes)
    flat = source.load(reshape_index(source.sizes, (n,))) if source.ndim else source.load(())
    init = x.load(broadcast_index(x.sizes, shape))
    op = MaskedScatter(init, cond, shape, (), cast(flat, x.dtype), n, False)
    return ctx.emit(op, shape, x.dtype)


def _along(ctx, x: TensorValue, dim: int, index: TensorValue, sizes, index_at,
           value: Node, combine: BinaryOp | None, wrap: bool = False) -> TensorValue:
    """Positions (i...) of `sizes` write x[i0, .., index[index_at(i)], .., i{n-1}]."""
    return write_regions(ctx, x, [_write_along(ctx, x, dim, index, sizes, index_at, value,
                                               combine, wrap)])


def _write_along(ctx, x: TensorValue, dim: int, index: TensorValue, sizes, index_at,
                 value: Node, combine: BinaryOp | None, wrap: bool = False) -> Write:
    _integer_index(ctx, index)
    iv = index_vars(len(sizes))
    if x.ndim == 0:  # a 0-dim x reads as one element: index 0 is the only valid one
        dest: tuple = ()
        bound = sympy.Integer(1)
    else:
        dest = tuple(indirect_var(0) if k == dim else v for k, v in enumerate(iv))
        bound = x.sizes[dim]
    where = cast(index.load(index_at(iv)), DType.int64)
    return Write(tuple(sizes), dest, value, (where,), (bound,), combine, wrap)


def _slices(ctx, x, dim, index, source, value, combine: BinaryOp | None) -> TensorValue:
    """Slice j of `source` along dim (its value: `value` over source positions) goes to
    position index[j]; a 0-dim source is one slice of size one everywhere."""
    sizes = source.sizes if source.ndim == x.ndim else (sympy.Integer(1),) * x.ndim
    return _along(ctx, x, dim, index, sizes,
                  lambda iv: ((iv[dim] if iv else sympy.Integer(0)),) if index.ndim else (),
                  value, combine)


# The copies into regions (index_copy, slice/select/diagonal_scatter) only move values:
# half tensors stay in their own type (in_storage_type), so a bfloat16 KV cache is updated in
# place, not widened whole and rounded back each call.
@register_lowering(aten.index_copy.default, family=FAMILY, in_storage_type=True)
def lower_index_copy(ctx, x, dim, index, source):
    """x.index_copy(dim, index, source): source's slice j goes to position index[j]."""
    dim = dim_index(dim, x.ndim)
    sizes = source.sizes if source.ndim == x.ndim else (sympy.Integer(1),) * x.ndim
    return _slices(ctx, x, dim, index, source, operand(source, x.dtype, sizes), None)


@register_lowering(aten.index_add.default, family=FAMILY)
def lower_index_add(ctx, x, dim, index, source, alpha=1):
    dim = dim_index(dim, x.ndim)
    sizes = source.sizes if source.ndim == x.ndim else (sympy.Integer(1),) * x.ndim
    value = operand(source, x.dtype, sizes)
    if alpha != 1:
        value = Binary(BinaryOp.MUL, value, constant(alpha, x.dtype), x.dtype)
    return _slices(ctx, x, dim, index, source, value, BinaryOp.ADD)


@register_lowering(aten.scatter.src, aten.scatter.value, aten.scatter_add.default,
                   aten.scatter.reduce, aten.scatter.value_reduce, family=FAMILY)
def lower_scatter(ctx, x, dim, index, src, reduce=None):
    """x.scatter(dim, index, src): element i of index names where src[i] goes along dim."""
    dim = dim_index(dim, x.ndim)
    sizes = index.sizes
    iv = index_vars(len(sizes))
    if isinstance(src, TensorValue):  # src may be larger than index: read its corner
        value = cast(src.load(iv if src.ndim else ()), x.dtype)
    else:
        value = constant(src, x.dtype)
    combine = BinaryOp.ADD if "scatter_add" in ctx.target else _SCATTER_REDUCE.get(reduce)
    if reduce is not None and combine is None:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"reduce={reduce!r}")
    return _along(ctx, x, dim, index, sizes, lambda iv: iv, value, combine)


_SCATTER_REDUCE = {"add": BinaryOp.ADD, "multiply": BinaryOp.MUL}
_REDUCE_TWO = {"sum": BinaryOp.ADD, "mean": BinaryOp.ADD, "prod": BinaryOp.MUL,
               "amax": BinaryOp.MAXIMUM, "amin": BinaryOp.MINIMUM}


def _identity(reduce: str, d: DType) -> Node:
    """The value a position starts from when the reduction leaves x's own value out."""
    if reduce in ("sum", "mean"):
        return constant(0, d)
    if reduce == "prod":
        return constant(1, d)
    if d.is_floating:
        return constant(float("-inf") if reduce == "amax" else float("inf"), d)
    if d is DType.bool:
        return constant(reduce == "amin", d)
    info = torch.iinfo(getattr(torch, d.name))
    return constant(info.min if reduce == "amax" else info.max, d)


@register_lowering(aten.scatter_reduce.two, family=FAMILY)
def lower_scatter_reduce(ctx, x, dim, index, src, reduce, include_self=True):
    """Each element of src combines into x[.., index[i], ..] in order; without include_self
    the positions written start from the reduction's identity; "mean" divides the sum by
    how many values met there (floor division for integers), as PyTorch's CPU kernel."""
    combine = _REDUCE_TWO.get(reduce)
    if combine is None:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"reduce={reduce!r}")
    dim = dim_index(dim, x.ndim)
    sizes = index.sizes
    iv = index_vars(len(sizes))
    value = cast(src.load(iv if src.ndim else ()), x.dtype)
    return _reduce_along(ctx, x, dim, index, sizes, lambda iv: iv, value, reduce, include_self)


@register_lowering(aten.index_reduce.default, family=FAMILY)
def lower_index_reduce(ctx, x, dim, index, source, reduce, include_self=True):
    """x.index_reduce(dim, index, source, reduce): slice j of source along dim combines into
    slice index[j] of x, in order of j (prod, mean, amax, amin), as scatter_reduce does."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"reduce={reduce!r}")
    dim = dim_index(dim, x.ndim)
    sizes = source.sizes if source.ndim == x.ndim else (sympy.Integer(1),) * x.ndim
    value = operand(source, x.dtype, sizes)
    return _reduce_along(ctx, x, dim, index, sizes,
                         lambda iv: ((iv[dim] if iv else sympy.Integer(0)),) if index.ndim else (),
                         value, reduce, include_self)


def _reduce_along(ctx, x, dim, index, sizes, at, value: Node, reduce: str,
                  include_self: bool) -> TensorValue:
    """Positions (i...) of `sizes` combine `value` into x[.., index[at(i)], ..] in row-major
    order; without include_self the positions written start from the reduction's identity;
    "mean" divides the sum by how many values met there (floor division for integers)."""
    combine = _REDUCE_TWO[reduce]
    writes = [] if include_self else [_write_along(ctx, x, dim, index, sizes, at,
                                                    _identity(reduce, x.dtype), None)]
    writes.append(_write_along(ctx, x, dim, index, sizes, at, value, combine))
    total = write_regions(ctx, x, writes)
    if reduce != "mean":
        return total
    d = x.dtype
    start = TensorValue(x.sizes, d, constant(1 if include_self else 0, d))
    count = write_regions(ctx, start, [_write_along(ctx, x, dim, index, sizes, at,
                                                    constant(1, d), BinaryOp.ADD)])
    one = constant(1, d)
    safe = Where(Binary(BinaryOp.EQ, count.body, constant(0, d), DType.bool), one, count.body, d)
    div = BinaryOp.DIV if d.is_floating else BinaryOp.FLOORDIV
    return ctx.pointwise(Binary(div, total.body, safe, d), x.sizes)


@register_lowering(aten.slice_scatter.default, family=FAMILY, in_storage_type=True)
def lower_slice_scatter(ctx, x, src, dim=0, start=None, end=None, step=1):
    dim = dim_index(dim, x.ndim)
    start = sympy.sympify(0 if start is None else start)
    if start.is_number and start < 0:
        start = sympy.Max(start + x.sizes[dim], 0)
    iv = index_vars(src.ndim)
    dest = list(iv)
    dest[dim] = start + step * iv[dim]
    value = operand(src, x.dtype, src.sizes)
    return write_regions(ctx, x, [Write(src.sizes, tuple(dest), value)])


@register_lowering(aten.select_scatter.default, family=FAMILY, in_storage_type=True)
def lower_select_scatter(ctx, x, src, dim, index):
    dim = dim_index(dim, x.ndim)
    index = sympy.sympify(index)
    if index.is_number and index < 0:
        index = index + x.sizes[dim]
    iv = index_vars(src.ndim)
    dest = iv[:dim] + (index,) + iv[dim:]
    value = operand(src, x.dtype, src.sizes)
    return write_regions(ctx, x, [Write(src.sizes, tuple(dest), value)])


@register_lowering(aten.diagonal_scatter.default, family=FAMILY, in_storage_type=True)
def lower_diagonal_scatter(ctx, x, src, offset=0, dim1=0, dim2=1):
    """x with its diagonal (as x.diagonal(offset, dim1, dim2) reads it) replaced by src."""
    _, _, dest = diagonal_index(x.ndim, int(offset), dim1, dim2)
    value = operand(src, x.dtype, src.sizes)
    return write_regions(ctx, x, [Write(src.sizes, dest, value)])


def _flat(t: TensorValue, n) -> Node:
    """Element i0 of `t` read in row-major order, as a 1-D tensor of `n` elements."""
    return t.load(reshape_index(t.sizes, (n,))) if t.ndim else t.load(())


@register_lowering(aten.put.default, family=FAMILY)
def lower_put(ctx, x, index, source, accumulate=False):
    """x.put(index, source): source's k-th element (row-major) goes to x's flat position
    index[k] (negative counts from the end), in order of k: the last one wins, or each adds
    in turn with accumulate."""
    _integer_index(ctx, index)
    n = numel(index.sizes)
    if sympy.simplify(numel(source.sizes) - n) != 0:
        raise UnsupportedOperatorError(ctx.target, ctx.source, "source and index must have the "
                                       "same number of elements")
    total = numel(x.sizes)
    dest = tuple(sympy.sympify(e).xreplace({index_vars(1)[0]: indirect_var(0)})
                 for e in reshape_index(x.sizes, (total,)))
    write = Write((n,), dest, cast(_flat(source, n), x.dtype),
                  (cast(_flat(index, n), DType.int64),), (total,),
                  BinaryOp.ADD if accumulate else None, wrap=True)
    return write_regions(ctx, x, [write])


@register_lowering(aten.as_strided_scatter.default, family=FAMILY, in_storage_type=True)
def lower_as_strided_scatter(ctx, x, src, size, stride, storage_offset=None):
    """x with the elements that x.as_strided(size, stride, storage_offset) views (over x's
    elements in row-major order, as aotc keeps x) replaced by src; a copy, so half values
    stay in their own type."""
    if x.buffer_name() is None:
        raise UnsupportedOperatorError(ctx.target, ctx.source, "as_strided_scatter into a view "
                                       "(its storage is another tensor's)")
    size = tuple(sympy.sympify(n) for n in size)
    stride = tuple(sympy.sympify(st) for st in stride)
    offset = sympy.sympify(storage_offset or 0)
    total = numel(x.sizes)
    last = offset + sum(((n - 1) * st for n, st in zip(size, stride)), sympy.Integer(0))
    if not any(n == 0 for n in size) and not surely_at_least(total, last + 1):
        raise UnsupportedOperatorError(ctx.target, ctx.source, "as_strided_scatter whose view "
                                       f"may reach past the tensor's {total} elements (last "
                                       f"offset {last})")
    if not _distinct_positions(size, stride):
        raise UnsupportedOperatorError(ctx.target, ctx.source, "as_strided_scatter through a "
                                       "view whose elements overlap (PyTorch leaves which "
                                       "value lands there unspecified)")
    iv = index_vars(len(size))
    flat = offset + sum((v * st for v, st in zip(iv, stride)), sympy.Integer(0))
    dest = tuple(sympy.sympify(e).xreplace({index_vars(1)[0]: flat})
                 for e in reshape_index(x.sizes, (total,)))
    return write_regions(ctx, x, [Write(size, dest, operand(src, x.dtype, size))])


def _distinct_positions(size, stride) -> bool:
    """Whether no two positions of a strided view share an element: with the axes of more
    than one element ordered by stride, each stride passes the span of the smaller ones."""
    axes = [(st, n) for n, st in zip(size, stride) if n != 1]
    if any(n == 0 for n in size):
        return True
    if not all(st.is_number and n.is_number for st, n in axes):
        return False
    span = 0
    for st, n in sorted(axes, key=lambda a: int(a[0])):
        if int(st) <= span:
            return False
        span += int(st) * (int(n) - 1)
    return True


@register_lowering(aten.one_hot.default, family=FAMILY)
def lower_one_hot(ctx, x, num_classes=-1):
    """one_hot(x, C): zeros [*x, C] with a 1 written at (i..., x[i...]); a class outside
    [0, C) is an input error, as PyTorch checks."""
    _integer_index(ctx, x)
    classes = ctx.out_sizes[-1]
    if num_classes != -1:
        classes = sympy.sympify(num_classes)
    iv = index_vars(x.ndim)
    one = constant(1, DType.int64)
    write = Write(x.sizes, (*iv, indirect_var(0)), one, (cast(x.load(iv), DType.int64),),
                  (classes,), wrap=False)
    start = TensorValue((*x.sizes, classes), DType.int64, constant(0, DType.int64))
    return write_regions(ctx, start, [write])
