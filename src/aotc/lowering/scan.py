"""Scans: cumsum and cumprod as one linear pass along their dim (the Scan template)."""
from __future__ import annotations

import torch

from ..dtypes import DType
from ..ir.expr import cast
from ..ir.nodes import ReduceType, Scan
from ..ir.symbols import numel
from .common import dim_index
from .context import LoweringContext, TensorValue
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "scan"
# the dtypes the shipped scan kernels run in; other integers scan in int64 and narrow after
SCANNED = (DType.float32, DType.float64, DType.int64)


def scan(ctx: LoweringContext, x: TensorValue, dim: int, combine: ReduceType) -> TensorValue:
    out_d = ctx.out_dtype
    d = out_d if out_d in SCANNED else DType.int64
    dim = dim_index(dim, x.ndim)
    src = ctx.realize(x) if x.dtype is d else \
        ctx.pointwise(cast(x.body, d), x.sizes, hint=f"{ctx.node_name}_in")
    name = src.buffer_name()
    assert name is not None
    sizes = x.sizes
    op = Scan(name, combine, numel(sizes[:dim]), sizes[dim] if sizes else 1,
              numel(sizes[dim + 1:]))
    res = ctx.emit(op, sizes, d)
    return res if d is out_d else ctx.pointwise(cast(res.body, out_d), sizes)


@register_lowering(aten.cumsum.default, family=FAMILY)
def lower_cumsum(ctx, x, dim, dtype=None):
    return scan(ctx, x, dim, ReduceType.SUM)


@register_lowering(aten.cumprod.default, family=FAMILY)
def lower_cumprod(ctx, x, dim, dtype=None):
    return scan(ctx, x, dim, ReduceType.PROD)
