"""Data-dependent sizes: nonzero, boolean-mask indexing (x[mask]) and masked_select as a
Compress (ir/compress.py) whose count symbol binds from the inputs before the run, or during
the run once the kernels computing the mask have run (ir/binding.py); nonzero_static and
tril/triu_indices as a Compress of a static count."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.compress import Compress, Count
from ..ir.expr import (
    Binary,
    BinaryOp,
    IndexValue,
    IndirectLoad,
    Load,
    Node,
    Where,
    cast,
    constant,
    substitute_index,
    transform,
)
from ..ir.nodes import BufferKind, Pointwise, Program
from ..ir.symbols import index_var, index_vars, reduction_var
from .common import broadcast_index
from .context import LoweringContext, TensorValue
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "compress"


def over_inputs(program: Program, e: Node) -> Node | None:
    """`e` with every pointwise buffer it reads replaced by its body, so that it reads
    inputs only; None where a reduction, kernel, constant or indirect read feeds it."""
    class Refused(Exception):
        pass

    def leaf(x: Node) -> Node:
        if isinstance(x, IndirectLoad):
            raise Refused
        if not isinstance(x, Load):
            return x
        buf = program.buffers[x.buffer]
        if buf.kind is BufferKind.INPUT:
            return x
        if buf.kind is BufferKind.COMPUTED and isinstance(buf.op, Pointwise):
            inner = substitute_index(buf.op.body, dict(zip(index_vars(len(x.index)), x.index)))
            return transform(inner, leaf)
        raise Refused

    try:
        return transform(e, leaf)
    except Refused:
        return None


def compress(ctx: LoweringContext, mask: TensorValue, inner, value_of, what: str,
             count=None, dtype: DType | None = None, fill: Node | None = None) -> TensorValue:
    """Rows of `value_of(r, inner index)` for each position r of `mask` that holds; with
    `fill`, `count` rows exactly: the first positions, then rows of `fill`."""
    count = ctx.out_sizes[0] if count is None else count
    rv = tuple(reduction_var(k) for k in range(mask.ndim))
    cond = cast(mask.load(rv), DType.bool)
    if isinstance(count, sympy.Symbol):  # bound before the run: count the mask
        counted = over_inputs(ctx.program, cond)
        if counted is None:  # counted during the run, after the kernels computing the mask
            kept = mask if mask.dtype is DType.bool and mask.buffer_name() else ctx.pointwise(
                cast(mask.body, DType.bool), mask.sizes, hint=f"{ctx.node_name}_mask")
            cond = counted = kept.load(rv)
        ctx.program.item_symbols[count] = Count(counted, tuple(mask.sizes))
        ctx.program.symbols.setdefault(count, (0, None))
    elif not sympy.sympify(count).is_number:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"{what}: export gave the "
                                       f"selected count as {count}")
    iv = tuple(index_var(k + 1) for k in range(len(inner)))
    op = Compress(cond, tuple(mask.sizes), tuple(inner), value_of(rv, iv), fill)
    return ctx.emit(op, (count, *inner), dtype or ctx.out_dtype)


def _nonzero_mask(x: TensorValue) -> TensorValue:
    return TensorValue(x.sizes, DType.bool, Binary(BinaryOp.NE, x.body, constant(0, x.dtype),
                                                   DType.bool))


@register_lowering(aten.nonzero_numpy.default, family=FAMILY)
def lower_nonzero_numpy(ctx, x: TensorValue):
    """nonzero(as_tuple=True): one index vector per dim, all of the same count."""
    mask = _nonzero_mask(x)
    count = ctx.outputs[0][0][0] if ctx.outputs and ctx.outputs[0] else ctx.out_sizes[0]
    return tuple(compress(ctx, mask, (), lambda rv, iv, k=k: IndexValue(rv[k] if rv else 0, DType.int64),
                          "nonzero", count, DType.int64) for k in range(max(x.ndim, 1)))


def _coords(rv, iv) -> Node:
    """Column k of a row of nonzero's result is r_k."""
    out: Node = IndexValue(sympy.Integer(0), DType.int64)
    for k in reversed(range(len(rv))):
        at = Binary(BinaryOp.EQ, IndexValue(iv[0], DType.int64), constant(k, DType.int64),
                    DType.bool)
        out = Where(at, IndexValue(rv[k], DType.int64), out, DType.int64)
    return out


@register_lowering(aten.nonzero.default, aten.argwhere.default, family=FAMILY)
def lower_nonzero(ctx, x: TensorValue):
    return compress(ctx, _nonzero_mask(x), (sympy.Integer(x.ndim),), _coords, "nonzero")


@register_lowering(aten.nonzero_static.default, family=FAMILY)
def lower_nonzero_static(ctx, x: TensorValue, *, size, fill_value=-1):
    """nonzero with a static row count: the first `size` nonzero positions, then rows of
    `fill_value`."""
    if not sympy.sympify(size).is_number or int(size) < 0:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"size={size} (a non-negative "
                                       "number is needed)")
    return compress(ctx, _nonzero_mask(x), (sympy.Integer(x.ndim),), _coords, "nonzero_static",
                    sympy.Integer(int(size)), DType.int64, constant(int(fill_value), DType.int64))


@register_lowering(aten.masked_select.default, family=FAMILY)
def lower_masked_select(ctx, x: TensorValue, mask: TensorValue):
    shape = _broadcast(x.sizes, mask.sizes)
    wide = TensorValue(shape, mask.dtype, mask.load(broadcast_index(mask.sizes, shape)))

    def pick(rv, iv):
        return x.load(_at(broadcast_index(x.sizes, shape), rv))

    return compress(ctx, wide, (), pick, "masked_select")


def lower_mask_index(ctx, x: TensorValue, indices) -> TensorValue:
    """x[mask] with the mask over x's leading dims: the selected rows, in order."""
    pos = [k for k, t in enumerate(indices) if t is not None]
    mask = indices[pos[0]] if len(pos) == 1 and pos[0] == 0 else None
    if mask is None or tuple(x.sizes[:mask.ndim]) != tuple(mask.sizes):
        raise UnsupportedOperatorError(ctx.target, ctx.source, "boolean-mask indexing takes "
                                       "one mask over the leading dims")
    m = mask.ndim
    inner = tuple(x.sizes[m:])

    def pick(rv, iv):
        return x.load(tuple(rv) + tuple(iv))

    return compress(ctx, mask, inner, pick, "boolean-mask indexing")


def _broadcast(a, b) -> tuple:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    return tuple(sympy.sympify(y if x == 1 else x) for x, y in zip(a, b))


def _at(index, rv) -> tuple:
    """An index over the broadcast shape (i* variables) read at the walk's r*."""
    mapping = dict(zip(index_vars(len(rv)), rv))
    return tuple(sympy.sympify(i).xreplace(mapping) for i in index)
