"""tensor_split by a tensor of indices: the pieces are views of x between boundaries read
from the data. Each boundary is a symbol bound at run time (with the inputs when the
indices are computed from them, else once their kernel ran), and each piece's length, an
unbacked symbol of export's, binds to the distance between its boundaries."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import Binary, BinaryOp, IndexValue, Load, Node, Where, cast, constant
from ..ir.symbols import index_vars
from .common import dim_index
from .compress import over_inputs
from .context import LoweringContext, TensorValue
from .registry import register_lowering
from .views import remap

aten = torch.ops.aten
FAMILY = "views"
I64 = DType.int64


def _bind(ctx: LoweringContext, symbol: sympy.Symbol, value: Node, upper) -> None:
    """`symbol` takes `value` at run time: read from the inputs when it is computed from
    them alone, else from a 0-dim buffer once its kernel has run."""
    body = over_inputs(ctx.program, value)
    if body is None:
        name = ctx.pointwise(value, (), hint=f"{ctx.node_name}_{symbol.name}").buffer_name()
        assert name is not None
        body = Load(name, (), I64)
    ctx.program.item_symbols[symbol] = body
    ctx.program.symbols.setdefault(symbol, (0, int(upper) if upper.is_number else None))


def _boundary(ctx: LoweringContext, indices: TensorValue, k: int, n) -> sympy.Symbol:
    """Index k as at::slice reads a bound: counted from the end when negative, clamped
    into [0, n]; a symbol bound to that value."""
    v = cast(indices.load((k,)), I64)
    size = IndexValue(sympy.sympify(n), I64)
    wrapped = Where(Binary(BinaryOp.LT, v, constant(0, I64), DType.bool),
                    Binary(BinaryOp.ADD, v, size, I64), v, I64)
    clamped = Binary(BinaryOp.MAXIMUM, Binary(BinaryOp.MINIMUM, wrapped, size, I64),
                     constant(0, I64), I64)
    symbol = sympy.Symbol(f"{ctx.fresh_name(f'{ctx.node_name}_at{k}')}", integer=True,
                          nonnegative=True)
    _bind(ctx, symbol, clamped, sympy.sympify(n))
    return symbol


@register_lowering(aten.tensor_split.tensor_indices_or_sections, family=FAMILY)
def lower_tensor_split(ctx, x, indices, dim=0):
    """Piece k is x[c(k-1) : max(c(k-1), c(k))] along dim, c the clamped boundaries (c(-1)
    = 0, the last piece runs to the end), as eager slices them."""
    if indices.ndim != 1:
        raise UnsupportedOperatorError(ctx.target, ctx.source, "a 0-dim tensor of sections "
                                       "(its value sets the number of pieces)")
    from torch.utils._sympy.symbol import SymT, symbol_is_type

    dim = dim_index(dim, x.ndim)
    n = x.sizes[dim]
    bounds = [_boundary(ctx, indices, k, n) for k in range(int(indices.sizes[0]))]
    starts = [sympy.Integer(0)] + bounds
    ends = bounds + [n]
    pieces = []
    iv = index_vars(x.ndim)
    for k, (start, end) in enumerate(zip(starts, ends)):
        sizes, _ = ctx.outputs[k]
        length = sizes[dim]
        value = sympy.Max(end - start, 0)
        if isinstance(length, sympy.Symbol) and symbol_is_type(length, SymT.UNBACKED_INT) \
                and length not in ctx.program.item_symbols:
            ctx.program.item_symbols[length] = IndexValue(value, I64)
            ctx.program.symbols.setdefault(length, (0, None))
        src = list(iv)
        src[dim] = start + iv[dim]
        pieces.append(remap(x, sizes, src))
    return tuple(pieces)
