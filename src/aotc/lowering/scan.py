"""Scans as one linear pass along their dim (the Scan template): cumsum, cumprod,
logcumsumexp, and cummax/cummin with the positions of their running max or min."""
from __future__ import annotations

import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import cast
from ..ir.nodes import Scan, ScanOp
from ..ir.symbols import numel
from .common import dim_index
from .context import LoweringContext, TensorValue
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "scan"
# the dtypes the shipped scan kernels run in; bool and narrower integers scan in int64
SCANNED = (DType.float32, DType.float64, DType.int64)


def _scan_dtype(d: DType) -> DType:
    return d if d in SCANNED else DType.int64


def scan(ctx: LoweringContext, x: TensorValue, dim: int, op: ScanOp, out_d: DType,
         positions: bool = False, hint: str | None = None) -> TensorValue:
    """The scan of x (cast to its scan dtype) along `dim`, stored as `out_d`."""
    d = _scan_dtype(x.dtype if positions else out_d)
    dim = dim_index(dim, x.ndim)
    src = ctx.realize(x) if x.dtype is d else \
        ctx.pointwise(cast(x.body, d), x.sizes, hint=f"{ctx.node_name}_in")
    name = src.buffer_name()
    assert name is not None
    sizes = x.sizes
    node = Scan(name, op, numel(sizes[:dim]), sizes[dim] if sizes else 1,
                numel(sizes[dim + 1:]), positions)
    stored = DType.int64 if positions else d
    res = ctx.emit(node, sizes, stored, hint)
    return res if stored is out_d else ctx.pointwise(cast(res.body, out_d), sizes)


@register_lowering(aten.cumsum.default, family=FAMILY)
def lower_cumsum(ctx, x, dim, dtype=None):
    return scan(ctx, x, dim, ScanOp.SUM, ctx.out_dtype)


@register_lowering(aten.cumprod.default, family=FAMILY)
def lower_cumprod(ctx, x, dim, dtype=None):
    return scan(ctx, x, dim, ScanOp.PROD, ctx.out_dtype)


@register_lowering(aten.logcumsumexp.default, family=FAMILY)
def lower_logcumsumexp(ctx, x, dim):
    if not ctx.out_dtype.is_floating:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"of {x.dtype.name}")
    return scan(ctx, x, dim, ScanOp.LOGSUMEXP, ctx.out_dtype)


@register_lowering(aten.cummax.default, aten.cummin.default, family=FAMILY)
def lower_cummax(ctx, x, dim):
    op = ScanOp.MAX if "cummax" in ctx.target else ScanOp.MIN
    values = scan(ctx, x, dim, op, x.dtype, hint=f"{ctx.node_name}_values")
    return values, scan(ctx, x, dim, op, DType.int64, positions=True,
                        hint=f"{ctx.node_name}_indices")
