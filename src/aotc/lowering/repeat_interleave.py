"""repeat_interleave with a tensor of repeats: output position j along the dim reads the
element whose run of repeats covers j (the count of cumulative ends at or before j). The
output length is the sum of the repeats: export's unbacked symbol, bound during the run
from that sum (ir/binding.py), unless the call gave output_size."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import CompileError
from ..ir.expr import Binary, BinaryOp, IndexValue, IndirectLoad, Load, Node, cast, indirect_var
from ..ir.nodes import ReduceType, Reduction, ScanOp
from ..ir.symbols import index_var, index_vars, reduction_var
from .context import LoweringContext, TensorValue
from .registry import register_lowering
from .scan import scan
from .views import lower_view

aten = torch.ops.aten
FAMILY = "compress"
I64 = DType.int64


def _bind_total(ctx: LoweringContext, repeats: TensorValue, length) -> None:
    """Bind the output length, when export left it an unbacked symbol, to sum(repeats)."""
    from torch.utils._sympy.symbol import SymT, symbol_is_type

    if not (isinstance(length, sympy.Symbol) and symbol_is_type(length, SymT.UNBACKED_INT)) \
            or length in ctx.program.item_symbols:
        return
    total = ctx.emit(Reduction(ReduceType.SUM, (repeats.sizes[0],), cast(
        repeats.load((reduction_var(0),)), I64)), (), I64, hint=f"{ctx.node_name}_total")
    name = total.buffer_name()
    assert name is not None
    ctx.program.item_symbols[length] = Load(name, (), I64)
    ctx.program.symbols.setdefault(length, (0, None))


def _source_positions(ctx: LoweringContext, repeats: TensorValue, n, length) -> TensorValue:
    """[length] int64: the element each output position repeats (repeats has n entries, or
    one entry every element repeats)."""
    if repeats.dtype not in (DType.int32, DType.int64):  # eager's kernel refuses the rest
        raise CompileError(f"{ctx.target} at {ctx.source or ctx.node_name}: repeats of dtype "
                           f"{repeats.dtype.name}; PyTorch's CPU kernel takes int32 or int64 "
                           "repeats only, and eager raises for this call too")
    if repeats.ndim == 0:
        repeats = lower_view(ctx, repeats, [1])
    if sympy.sympify(repeats.sizes[0]) == 1 and sympy.sympify(n) != 1:
        repeats = ctx.pointwise(cast(repeats.load((0,)), I64), (n,),
                                hint=f"{ctx.node_name}_repeats")
    _bind_total(ctx, repeats, length)
    ends = scan(ctx, repeats, 0, ScanOp.SUM, I64, hint=f"{ctx.node_name}_ends")
    covered = Binary(BinaryOp.LE, ends.load((reduction_var(0),)), IndexValue(index_var(0), I64),
                     DType.bool)
    return ctx.emit(Reduction(ReduceType.SUM, (repeats.sizes[0],), cast(covered, I64)),
                    (length,), I64, hint=f"{ctx.node_name}_source")


@register_lowering(aten.repeat_interleave.Tensor, family=FAMILY)
def lower_repeat_interleave_indices(ctx, repeats, output_size=None):
    """repeat_interleave(repeats): each k repeated repeats[k] times, in the dtype of the
    repeats (int32 or int64), as eager returns it."""
    source = _source_positions(ctx, repeats, repeats.sizes[0] if repeats.ndim else 1,
                               ctx.out_sizes[0])
    if ctx.out_dtype is I64:
        return source
    return ctx.pointwise(cast(source.body, ctx.out_dtype), ctx.out_sizes)


@register_lowering(aten.repeat_interleave.self_Tensor, family=FAMILY)
def lower_repeat_interleave(ctx, x, repeats, dim=None, output_size=None):
    if dim is None:
        x = lower_view(ctx, x, [sympy.Mul(*x.sizes)])
        dim = 0
    dim = dim % max(x.ndim, 1)
    if x.ndim == 0:
        x = lower_view(ctx, x, [1])
    length = ctx.out_sizes[dim]
    source = _source_positions(ctx, repeats, x.sizes[dim], length)
    if not isinstance(x.body, Load):
        x = ctx.realize(x)
    iv = index_vars(len(ctx.out_sizes))
    inner = x.load(iv[:dim] + (indirect_var(0),) + iv[dim + 1:])
    assert isinstance(inner, Load)
    at: Node = source.load((iv[dim],))
    return ctx.pointwise(IndirectLoad(inner.buffer, inner.index, (at,), (x.sizes[dim],), x.dtype),
                         ctx.out_sizes)
