"""Matrices as the linear-algebra kernels (kernels/linalg*.cpp) take them, shared by the
lowering/linalg_*.py rules: batches of contiguous row-major matrices, real or complex, and
the views of a kernel's one packed result buffer; the run-time check of an `info` result.

A complex matrix reaches a rule registered with `on_pairs` as its (real, imag) pairs: a real
tensor with a last dim of 2 (frontend/complex.py). `pairs` below says so; the matrix dims are
then the two before it. `complex_matrices(ctx)` tells a rule which kind its node computes."""
from __future__ import annotations

import sympy
import torch
from torch.utils import _pytree as pytree

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import Binary, BinaryOp, IndexValue, Load, Node, Unary, UnaryOp, Where, cast, constant
from ..ir.nodes import ReduceType, Reduction
from ..ir.symbols import index_vars, reduction_var
from .common import broadcast_shapes
from .context import LoweringContext, TensorValue
from .views import lower_expand, remap

KERNEL_DTYPES = (DType.float32, DType.float64)
I32 = DType.int32


def complex_matrices(ctx: LoweringContext) -> bool:
    """Whether the node's tensor arguments are complex (each then given as its pairs)."""
    return any(isinstance(t, torch.Tensor) and t.dtype.is_complex
               for t in pytree.tree_leaves((ctx.example_args, ctx.example_kwargs)))


def matrix_dims(pairs: bool) -> int:
    """The trailing dims that are not the batch: rows, cols (and the pair)."""
    return 3 if pairs else 2


def kernel_dtype(ctx: LoweringContext, *xs: TensorValue) -> DType:
    """The one floating dtype the kernels run in, as PyTorch's CPU linalg takes them (of
    the parts, for complex matrices)."""
    d = xs[0].dtype
    if d not in KERNEL_DTYPES or any(x.dtype is not d for x in xs):
        raise UnsupportedOperatorError(ctx.target, ctx.source, "of " + ", ".join(
            x.dtype.name for x in xs) + " (the linear-algebra kernels take float32 or float64)")
    return d


def contiguous(ctx: LoweringContext, x: TensorValue, hint: str) -> str:
    """x as a contiguous buffer of its own (copied when a view), its name."""
    if x.buffer_name() is None:
        x = ctx.pointwise(x.body, x.sizes, hint=f"{ctx.node_name}_{hint}")
    name = x.buffer_name()
    assert name is not None
    return name


def broadcast_batch(ctx: LoweringContext, a: TensorValue, b: TensorValue, pairs: bool = False
                    ) -> tuple[TensorValue, TensorValue, tuple]:
    """a [*, n, n] and b [*, n, k] expanded to one broadcast batch."""
    t = matrix_dims(pairs)
    batch = broadcast_shapes(a.sizes[:-t], b.sizes[:-t])
    return (lower_expand(ctx, a, batch + a.sizes[-t:]),
            lower_expand(ctx, b, batch + b.sizes[-t:]), batch)


def int32_pivots(ctx: LoweringContext, pivots: TensorValue, batch: tuple) -> TensorValue:
    """A factorization's pivots [*, k] expanded to `batch` and read as int32, as the solves
    take them."""
    pivots = lower_expand(ctx, pivots, batch + pivots.sizes[-1:])
    if pivots.dtype is I32:
        return pivots
    return TensorValue(pivots.sizes, I32, cast(pivots.body, I32))


def transposed(x: TensorValue, pairs: bool = False) -> TensorValue:
    """The view swapping x's two matrix dims."""
    t = matrix_dims(pairs)
    iv = list(index_vars(x.ndim))
    iv[-t], iv[-t + 1] = iv[-t + 1], iv[-t]
    sizes = list(x.sizes)
    sizes[-t], sizes[-t + 1] = sizes[-t + 1], sizes[-t]
    return remap(x, tuple(sizes), iv)


def conjugated(ctx: LoweringContext, x: TensorValue, pairs: bool) -> TensorValue:
    """conj(x): the imaginary parts negated (x itself when real)."""
    if not pairs:
        return x
    part = IndexValue(index_vars(x.ndim)[-1], DType.int64)
    imaginary = Binary(BinaryOp.EQ, part, constant(1, DType.int64), DType.bool)
    body = Where(imaginary, Unary(UnaryOp.NEG, x.body, x.dtype), x.body, x.dtype)
    return TensorValue(x.sizes, x.dtype, body)


def adjoint(ctx: LoweringContext, x: TensorValue, pairs: bool) -> TensorValue:
    """x^H (x^T when real), a view."""
    return conjugated(ctx, transposed(x, pairs), pairs)


def _real_one(x_ndim: int, pairs: bool, d: DType) -> Node:
    """1 (its real part, 0 its imaginary one for pairs)."""
    if not pairs:
        return constant(1, d)
    part = IndexValue(index_vars(x_ndim)[-1], DType.int64)
    return cast(Binary(BinaryOp.EQ, part, constant(0, DType.int64), DType.bool), d)


def identity_like(ctx: LoweringContext, batch: tuple, n, d: DType, pairs: bool = False
                  ) -> TensorValue:
    """The identity matrices [*batch, n, n] (of pairs)."""
    k, ndim = len(batch), len(batch) + matrix_dims(pairs)
    i, j = (IndexValue(index_vars(ndim)[k + t], DType.int64) for t in range(2))
    on = Binary(BinaryOp.EQ, i, j, DType.bool)
    body = Where(on, _real_one(ndim, pairs, d), constant(0, d), d)
    return ctx.pointwise(body, batch + (n, n) + ((sympy.Integer(2),) if pairs else ()),
                         hint=f"{ctx.node_name}_eye")


def triangle(ctx: LoweringContext, x: TensorValue, sizes: tuple, keep: BinaryOp,
             unit_diagonal: bool = False, pairs: bool = False) -> TensorValue:
    """The leading `sizes` (rows, cols) block of x [*, r, c] with the elements (i, j) for
    which `i keep j` fails set to 0, and with a diagonal of ones when `unit_diagonal`."""
    t = matrix_dims(pairs)
    batch = x.sizes[:-t]
    b = len(batch)
    full = batch + tuple(sizes) + ((sympy.Integer(2),) if pairs else ())
    part = remap(x, full, index_vars(len(full)))
    i, j = (IndexValue(index_vars(len(full))[b + u], DType.int64) for u in range(2))
    body = Where(Binary(keep, i, j, DType.bool), part.body, constant(0, x.dtype), x.dtype)
    if unit_diagonal:
        body = Where(Binary(BinaryOp.EQ, i, j, DType.bool), _real_one(len(full), pairs, x.dtype),
                     body, x.dtype)
    return ctx.pointwise(body, full, hint=f"{ctx.node_name}_{keep.name.lower()}")


def packed_part(packed: TensorValue, sizes: tuple, offset, index, dtype: DType | None = None,
                *, pairs: bool = False, real_part: bool = False) -> TensorValue:
    """The view of a kernel's packed output [*batch, each] with `sizes` (batch first) whose
    element is packed[*b, offset + index(trailing index vars)], cast to `dtype`. A complex
    kernel's output is [*batch, each, 2]: its view is of pairs (`pairs`: sizes + (2,)) or of
    the real parts (`real_part`: pivots, info, log |det|)."""
    complex_packed = pairs or real_part
    k = packed.ndim - (2 if complex_packed else 1)
    view_sizes = tuple(sizes) + ((sympy.Integer(2),) if pairs else ())
    iv = index_vars(len(view_sizes))
    if pairs:
        at = tuple(iv[:k]) + (offset + index(iv[k:-1]), iv[-1])
    elif real_part:
        at = tuple(iv[:k]) + (offset + index(iv[k:]), sympy.Integer(0))
    else:
        at = tuple(iv[:k]) + (offset + index(iv[k:]),)
    view = remap(packed, view_sizes, at)
    if dtype is None or dtype is view.dtype:
        return view
    return TensorValue(view.sizes, dtype, cast(view.body, dtype))


def check_info(ctx: LoweringContext, info: TensorValue, api_name: str) -> None:
    """Fail the run with an input error when any matrix's `info` is not 0 (checked right
    after the kernel that computes it, as eager's _linalg_check_errors raises)."""
    counted = ctx.emit(Reduction(ReduceType.SUM, tuple(info.sizes), cast(Binary(
        BinaryOp.NE, info.load(tuple(reduction_var(r) for r in range(info.ndim))),
        constant(0, info.dtype), DType.bool), DType.int64)), (), DType.int64,
        hint=f"{ctx.node_name}_failed")
    name = counted.buffer_name()
    assert name is not None
    failed = sympy.Symbol(f"linalg_failed_{name}", integer=True, nonnegative=True)
    ctx.program.item_symbols[failed] = Load(name, (), DType.int64)
    ctx.program.symbols.setdefault(failed, (0, None))
    what = ("the input is not positive-definite" if "cholesky" in api_name
            else "the input matrix is singular")
    where = " (one or more matrices of the batch)" if info.ndim else ""
    ctx.require(sympy.Eq(failed, 0, evaluate=False), f"{api_name}: {what}{where}")


def check_info_if(ctx: LoweringContext, info: TensorValue, check_errors: bool) -> None:
    """check_info for an `_ex` op's check_errors, under the op's name as eager's check
    gives it (linalg_inv_ex)."""
    if check_errors:
        check_info(ctx, info, ctx.target.removeprefix("aten.").split(".")[0])


def require_square(ctx: LoweringContext, a: TensorValue, pairs: bool = False) -> None:
    t = matrix_dims(pairs)
    ctx.require(sympy.Eq(a.sizes[-t], a.sizes[-t + 1], evaluate=False),
                "A must be batches of square matrices")
