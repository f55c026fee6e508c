"""Indexing lowerings: reads through data-dependent indices (index, index_select,
embedding, gather, take) become IndirectLoads; codegen wraps negative indices and reports
out-of-range ones as an input error."""
from __future__ import annotations

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
    Unary,
    UnaryOp,
    Where,
    cast,
    constant,
    indirect_var,
)
from ..ir.nodes import ReduceType, Reduction
from ..ir.symbols import index_vars, numel, reduction_var
from .common import broadcast_index, dim_index
from .context import LoweringContext, TensorValue
from .linalg import norm_reduce_type, norm_root, norm_term
from .registry import register_lowering
from .views import reshape_index

aten = torch.ops.aten
FAMILY = "indexing"


def read_indirect(ctx: LoweringContext, x: TensorValue, src: list, indices: list,
                  wrap: bool = False, bounds: tuple | None = None,
                  sizes: tuple | None = None) -> TensorValue:
    """Output element (i...) = x[src], where src[k] is an index expression for plain dims and
    None for the dims indexed by the int64 expressions in `indices` (in order). The output
    has `sizes` (default: the node's output sizes)."""
    if not isinstance(_stored(x.body), Load):
        x = ctx.realize(x)
    it = iter(range(len(indices)))
    full = [indirect_var(next(it)) if s is None else s for s in src]
    if bounds is None:
        bounds = tuple(x.sizes[k] for k, s in enumerate(src) if s is None)
    inner = _stored(x.load(full))  # x may be a view: compose its index map with ours
    assert isinstance(inner, Load)
    load = IndirectLoad(inner.buffer, inner.index, tuple(indices), bounds, inner.dtype, wrap)
    return ctx.pointwise(cast(load, x.dtype), sizes)


def _stored(body):
    """The load under a widening cast (a half tensor seen in float32, lowering/opmath.py): an
    indirect read picks the stored values and widens only those, never the whole tensor (an
    embedding table)."""
    return body.x if isinstance(body, Cast) and isinstance(body.x, Load) else body


def _index_node(t: TensorValue, shape, vars_):
    """Index tensor `t` broadcast to `shape`, read at loop variables `vars_`, as int64."""
    idx = broadcast_index(t.sizes, shape)
    mapping = dict(zip(index_vars(len(shape)), vars_))
    return cast(t.load(tuple(sympy.sympify(i).xreplace(mapping) for i in idx)), DType.int64)


def _check_integer(ctx, t: TensorValue, masks: bool = False) -> None:
    """Index tensors hold integers; for x[idx], bool/uint8 ones are masks instead."""
    if masks and t.dtype in (DType.bool, DType.uint8):
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       "boolean-mask indexing has a data-dependent shape")
    if t.dtype.is_floating or t.dtype is DType.bool:
        raise UnsupportedOperatorError(ctx.target, ctx.source, "indices must be integers")


@register_lowering(aten.index.Tensor, family=FAMILY)
def lower_index(ctx, x: TensorValue, indices, wrap: bool = True):
    """x[i0, :, i2] advanced indexing: the broadcast index dims replace the indexed dims in
    place when those are adjacent, else they lead the result (numpy's rule)."""
    indices = list(indices) + [None] * (x.ndim - len(indices))
    pos = [k for k, t in enumerate(indices) if t is not None]
    if any(indices[k].dtype in (DType.bool, DType.uint8) for k in pos):
        from .compress import lower_mask_index  # x[mask]: as many rows as the mask selects
        return lower_mask_index(ctx, x, indices)
    for k in pos:
        _check_integer(ctx, indices[k], masks=True)
    nb = max(indices[k].ndim for k in pos)
    out = ctx.out_sizes
    iv = index_vars(len(out))
    adjacent = pos == list(range(pos[0], pos[-1] + 1))
    first = pos[0] if adjacent else 0
    bshape = tuple(out[first:first + nb])
    bvars = iv[first:first + nb]
    rest = iter(iv[:first] + iv[first + nb:])
    src, nodes = [], []
    for t in indices:
        if t is None:
            src.append(next(rest))
        else:
            src.append(None)
            nodes.append(_index_node(t, bshape, bvars))
    return read_indirect(ctx, x, src, nodes, wrap)


@register_lowering(aten.index_select.default, family=FAMILY)
def lower_index_select(ctx, x, dim, index):
    _check_integer(ctx, index)
    dim = dim_index(dim, x.ndim)
    if x.ndim == 0:  # a scalar reads as a one-element vector: index 0 is the only valid one
        return read_indirect(ctx, x, [], [cast(index.load((0,) * index.ndim), DType.int64)],
                             bounds=(sympy.Integer(1),))
    iv = index_vars(x.ndim)
    src = [None if k == dim else iv[k] for k in range(x.ndim)]
    return read_indirect(ctx, x, src, [cast(index.load((iv[dim],) if index.ndim else ()), DType.int64)])


@register_lowering(aten.embedding.default, family=FAMILY)
def lower_embedding(ctx, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return lower_index(ctx, weight, [indices], wrap=False)


@register_lowering(aten.embedding_renorm.default, family=FAMILY, in_storage_type=True)
def lower_embedding_renorm(ctx, weight, indices, max_norm, norm_type):
    """The weight with each row that `indices` reads scaled by max_norm / (norm + 1e-7) where
    its p-norm is above max_norm, other rows as they are: what embedding(max_norm=...) does to
    its weight (in place) before reading it. As in eager, the norm is rounded to the weight's
    type and the scale computed in double."""
    _check_integer(ctx, indices)
    d = weight.dtype.compute
    rows, cols = weight.sizes
    i = index_vars(1)[0]
    p = float(norm_type)
    magnitude = Unary(UnaryOp.ABS, cast(weight.load((i, reduction_var(0))), d), d)
    total = ctx.emit(Reduction(norm_reduce_type(p), (cols,), norm_term(magnitude, p, d)),
                     (rows,), d, f"{ctx.node_name}_norm")
    norm = cast(cast(norm_root(total.body, p, d), weight.dtype), DType.float64)
    rvars = [reduction_var(k) for k in range(indices.ndim)]
    hit = Binary(BinaryOp.EQ, cast(indices.load(rvars), DType.int64), IndexValue(i, DType.int64),
                 DType.bool)
    read = ctx.emit(Reduction(ReduceType.ANY, tuple(indices.sizes), hit), (rows,), DType.bool,
                    f"{ctx.node_name}_read")
    limit = constant(max_norm, DType.float64)
    above = Binary(BinaryOp.AND, read.body, Binary(BinaryOp.GT, norm, limit, DType.bool),
                   DType.bool)
    shrink = Binary(BinaryOp.DIV, limit, Binary(BinaryOp.ADD, norm, constant(1e-7, DType.float64),
                                                 DType.float64), DType.float64)
    scale = ctx.pointwise(cast(Where(above, shrink, constant(1, DType.float64), DType.float64), d),
                          (rows,))
    i, j = index_vars(2)
    body = Binary(BinaryOp.MUL, cast(weight.load((i, j)), d), scale.load((i,)), d)
    return ctx.pointwise(cast(body, weight.dtype), weight.sizes)


@register_lowering(aten.gather.default, family=FAMILY)
def lower_gather(ctx, x, dim, index, sparse_grad=False):
    _check_integer(ctx, index)
    dim = dim_index(dim, x.ndim)
    iv = index_vars(index.ndim)
    src = [None if k == dim else iv[k] for k in range(x.ndim)]
    return read_indirect(ctx, x, src, [cast(index.load(iv), DType.int64)])


@register_lowering(aten.take.default, family=FAMILY)
def lower_take(ctx, x, index):
    """x.take(index): x's elements in row-major order read at `index` (negative ones count
    from the end), in index's shape."""
    _check_integer(ctx, index)
    n = numel(x.sizes)
    flat = TensorValue((n,), x.dtype, x.load(reshape_index(x.sizes, (n,))))
    iv = index_vars(index.ndim)
    return read_indirect(ctx, flat, [None], [cast(index.load(iv), DType.int64)], wrap=True,
                         bounds=(n,), sizes=index.sizes)
