"""Traits every lowering family shares: broadcasting, type promotion, operand loads."""
from __future__ import annotations

from collections.abc import Sequence

import sympy

from ..dtypes import DType
from ..errors import CompileError
from ..ir.expr import Node, cast, constant
from ..ir.scalars import natural_dtype
from ..ir.symbols import index_vars
from .context import TensorValue

Arg = TensorValue | int | float | bool



def _category(d: DType) -> int:
    return 0 if d is DType.bool else (2 if d.is_floating else 1)


def _scalar_dtype(x) -> DType:
    if isinstance(x, sympy.Basic):  # a SymInt / SymFloat / SymBool: its Python type
        x = {DType.bool: True, DType.int64: 0}.get(natural_dtype(x), 0.0)
    if isinstance(x, bool):
        return DType.bool
    if isinstance(x, int):
        return DType.int64
    return DType.float32


_ORDER = [DType.bool, DType.uint8, DType.int8, DType.int16, DType.int32, DType.int64,
          DType.float16, DType.bfloat16, DType.float32, DType.float64]


def promote_types(a: DType, b: DType) -> DType:
    if a == b:
        return a
    if {a, b} == {DType.float16, DType.bfloat16}:
        return DType.float32
    if {a, b} == {DType.uint8, DType.int8}:
        return DType.int16
    return max(a, b, key=_ORDER.index)


def promote(*args: Arg) -> DType:
    """torch's result_type: tensors decide within a category; scalars only lift the category."""
    tensors = [a.dtype for a in args if isinstance(a, TensorValue)]
    scalars = [_scalar_dtype(a) for a in args if not isinstance(a, TensorValue) and a is not None]
    out = tensors[0] if tensors else (scalars[0] if scalars else DType.float32)
    for d in tensors[1:]:
        out = promote_types(out, d)
    for d in scalars:
        if _category(d) > _category(out):
            out = DType.float32 if d.is_floating else DType.int64
    if not tensors:
        for d in scalars:
            out = promote_types(out, d)
    return out


def broadcast_shapes(*shapes) -> tuple[sympy.Expr, ...]:
    """The broadcast of `shapes` (a symbolic size broadcasts over 1)."""
    n = max((len(s) for s in shapes), default=0)
    out: list[sympy.Expr] = []
    for k in range(n):
        dims = [s[len(s) - n + k] for s in shapes if len(s) - n + k >= 0]
        rest = [d for d in dims if d != 1]
        out.append(rest[0] if rest else sympy.Integer(1))
    return tuple(out)


def broadcast_index(sizes: Sequence[sympy.Expr], out_sizes: Sequence[sympy.Expr]):
    """The operand index that reads its element for output position (i0, ...)."""
    ivars = index_vars(len(out_sizes))
    lead = len(out_sizes) - len(sizes)
    if lead < 0:
        raise CompileError(f"cannot broadcast shape {tuple(sizes)} to {tuple(out_sizes)}")
    return tuple(
        sympy.Integer(0) if (s == 1 and out_sizes[lead + k] != 1) else ivars[lead + k]
        for k, s in enumerate(sizes)
    )


def operand(x: Arg, dtype: DType, out_sizes: Sequence[sympy.Expr]) -> Node:
    """`x` read at the output index, broadcast and cast to `dtype`."""
    if isinstance(x, TensorValue):
        return cast(x.load(broadcast_index(x.sizes, out_sizes)), dtype)
    return constant(x, dtype)  # a number, or a symbolic scalar computed at run time


def dim_index(dim: int, ndim: int) -> int:
    """Wrap a possibly negative dim, as torch does (0-dim tensors accept -1 and 0)."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise CompileError(f"dimension {dim} out of range for a tensor of rank {ndim}")
    return dim % n


def dims_list(dims, ndim: int) -> list[int]:
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(ndim))
    if isinstance(dims, int):
        dims = [dims]
    dims = sorted({dim_index(d, ndim) for d in dims})
    # a 0-dim tensor accepts dim 0 / -1 but has no axis to reduce over
    return dims if ndim else []
