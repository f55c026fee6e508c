"""LU with partial pivoting on the shipped kernels (kernels/linalg.cpp) and what PyTorch
builds on it: lu_factor, lu, lu_unpack, lu_solve, solve, inv, det, slogdet; and the run-time
check of an `info` result (`_linalg_check_errors`: a singular matrix is an input error, as
eager raises).

A kernel writes its results into one buffer (ir/linalg.py); the factors, pivots, info and
determinant are views of it. Matrices are float32 or float64, batched over leading dims."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import Binary, BinaryOp, IndexValue, Load, Where, cast, constant
from ..ir.linalg import LU_EXTRA, Linalg, LinalgOp
from ..ir.nodes import ReduceType, Reduction
from ..ir.symbols import index_vars, numel, reduction_var
from .common import broadcast_shapes
from .context import LoweringContext, TensorValue
from .registry import register_lowering
from .views import lower_expand, remap

aten = torch.ops.aten
FAMILY = "linalg"
KERNEL_DTYPES = (DType.float32, DType.float64)
I32 = DType.int32


# ---- shared with linalg_cholesky.py -------------------------------------------------------
def kernel_dtype(ctx: LoweringContext, *xs: TensorValue) -> DType:
    """The one floating dtype the kernels run in, as PyTorch's CPU linalg takes them."""
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


def broadcast_batch(ctx: LoweringContext, a: TensorValue, b: TensorValue
                    ) -> tuple[TensorValue, TensorValue, tuple]:
    """a [*, n, n] and b [*, n, k] expanded to one broadcast batch."""
    batch = broadcast_shapes(a.sizes[:-2], b.sizes[:-2])
    return (lower_expand(ctx, a, batch + a.sizes[-2:]),
            lower_expand(ctx, b, batch + b.sizes[-2:]), batch)


def transposed(x: TensorValue) -> TensorValue:
    """The view swapping x's last two dims."""
    iv = list(index_vars(x.ndim))
    iv[-1], iv[-2] = iv[-2], iv[-1]
    return remap(x, x.sizes[:-2] + (x.sizes[-1], x.sizes[-2]), iv)


def identity_like(ctx: LoweringContext, batch: tuple, n, d: DType) -> TensorValue:
    """The identity matrices [*batch, n, n]."""
    k = len(batch)
    i, j = (IndexValue(index_vars(k + 2)[k + t], DType.int64) for t in range(2))
    return ctx.pointwise(cast(Binary(BinaryOp.EQ, i, j, DType.bool), d), batch + (n, n),
                         hint=f"{ctx.node_name}_eye")


def packed_part(packed: TensorValue, sizes: tuple, offset, index, dtype: DType | None = None
                ) -> TensorValue:
    """The view of a kernel's packed output [*batch, each] with `sizes` (batch first) whose
    element is packed[*b, offset + index(trailing index vars)], cast to `dtype`."""
    k = packed.ndim - 1
    iv = index_vars(len(sizes))
    view = remap(packed, sizes, tuple(iv[:k]) + (offset + index(iv[k:]),))
    if dtype is None or dtype is view.dtype:
        return view
    return TensorValue(view.sizes, dtype, cast(view.body, dtype))


# ---- LU ------------------------------------------------------------------------------------
class Factored:
    """The LU factorization of a [*batch, m, n] as views of the kernel's one buffer."""

    def __init__(self, ctx: LoweringContext, a: TensorValue):
        self.d = kernel_dtype(ctx, a)
        self.batch, (self.m, self.n) = a.sizes[:-2], a.sizes[-2:]
        self.k = sympy.Min(self.m, self.n)
        each = self.m * self.n + self.k + LU_EXTRA
        op = Linalg(LinalgOp.LU_FACTOR, (contiguous(ctx, a, "a"),), numel(self.batch),
                    self.m, self.n)
        self.packed = ctx.emit(op, self.batch + (each,), self.d, hint=f"{ctx.node_name}_lu")

    def factors(self) -> TensorValue:
        return packed_part(self.packed, self.batch + (self.m, self.n), 0,
                           lambda ij: ij[0] * self.n + ij[1])

    def pivots(self) -> TensorValue:
        """int32, 1-based, as LAPACK's and PyTorch's."""
        return packed_part(self.packed, self.batch + (self.k,), self.m * self.n,
                           lambda j: j[0], I32)

    def extra(self, slot: int, dtype: DType | None = None) -> TensorValue:
        return packed_part(self.packed, self.batch, self.m * self.n + self.k + slot,
                           lambda _: 0, dtype)

    def info(self) -> TensorValue:
        return self.extra(0, I32)


def lu_solve(ctx: LoweringContext, lu: TensorValue, pivots: TensorValue, b: TensorValue,
             adjoint: bool = False) -> TensorValue:
    """x solving A x = b (A^T x = b) from A's factors and pivots; b [*, n, k]."""
    d = kernel_dtype(ctx, lu, b)
    lu, b, batch = broadcast_batch(ctx, lu, b)
    pivots = lower_expand(ctx, pivots, batch + pivots.sizes[-1:])
    if pivots.dtype is not I32:
        pivots = TensorValue(pivots.sizes, I32, cast(pivots.body, I32))
    n, k = b.sizes[-2:]
    op = Linalg(LinalgOp.LU_SOLVE, (contiguous(ctx, lu, "lu"), contiguous(ctx, pivots, "pivots"),
                                    contiguous(ctx, b, "b")), numel(batch), n, rhs=k,
                trans=adjoint)
    return ctx.emit(op, batch + (n, k), d, hint=f"{ctx.node_name}_x")


@register_lowering(aten.linalg_lu_factor_ex.default, family=FAMILY)
def lower_lu_factor_ex(ctx, a, pivot=True, check_errors=False):
    _require_pivoting(ctx, pivot)
    lu = Factored(ctx, a)
    _check_info(ctx, lu.info(), check_errors)
    return lu.factors(), lu.pivots(), lu.info()


@register_lowering(aten.linalg_lu.default, family=FAMILY)
def lower_lu(ctx, a, pivot=True):
    _require_pivoting(ctx, pivot)
    lu = Factored(ctx, a)
    return unpack(ctx, lu.factors(), lu.pivots())


@register_lowering(aten.lu_unpack.default, family=FAMILY)
def lower_lu_unpack(ctx, lu, pivots, unpack_data=True, unpack_pivots=True):
    if not (unpack_data and unpack_pivots):
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       "with unpack_data or unpack_pivots False")
    kernel_dtype(ctx, lu)
    return unpack(ctx, lu, pivots)


def unpack(ctx: LoweringContext, lu: TensorValue, pivots: TensorValue) -> tuple:
    """(P, L, U) with A = P L U from the factors [*, m, n] and pivots [*, min(m, n)]."""
    batch, (m, n) = lu.sizes[:-2], lu.sizes[-2:]
    k = sympy.Min(m, n)
    b = len(batch)
    i, j = (IndexValue(index_vars(b + 2)[b + t], DType.int64) for t in range(2))
    zero, one = constant(0, lu.dtype), constant(1, lu.dtype)

    def triangle(sizes, keep: BinaryOp, diagonal) -> TensorValue:
        part = remap(lu, batch + sizes, index_vars(b + 2))
        on = Binary(BinaryOp.EQ, i, j, DType.bool)
        body = Where(Binary(keep, i, j, DType.bool), part.body, zero, lu.dtype)
        if diagonal is not None:
            body = Where(on, diagonal, body, lu.dtype)
        return ctx.pointwise(body, batch + sizes, hint=f"{ctx.node_name}_{keep.name.lower()}")

    lower = triangle((m, k), BinaryOp.GT, one)
    upper = triangle((k, n), BinaryOp.LE, None)
    if pivots.dtype is not I32:
        pivots = TensorValue(pivots.sizes, I32, cast(pivots.body, I32))
    op = Linalg(LinalgOp.LU_PERMUTATION, (contiguous(ctx, pivots, "pivots"),), numel(batch),
                m, k)
    perm = ctx.emit(op, batch + (m, m), lu.dtype, hint=f"{ctx.node_name}_p")
    return perm, lower, upper


@register_lowering(aten.linalg_lu_solve.default, family=FAMILY)
def lower_lu_solve(ctx, lu, pivots, b, left=True, adjoint=False):
    if left:
        return lu_solve(ctx, lu, pivots, b, adjoint)
    # x A = b  <=>  A^T x^T = b^T
    return transposed(lu_solve(ctx, lu, pivots, transposed(b), not adjoint))


@register_lowering(aten._linalg_solve_ex.default, family=FAMILY)
def lower_solve_ex(ctx, a, b, left=True, check_errors=False):
    # b is a batch of vectors when it has one dim fewer than a (torch.linalg.solve's rule)
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.sizes == a.sizes[:-1])
    rhs = remap(b, b.sizes + (sympy.Integer(1),), index_vars(b.ndim + 1)[:-1]) if vector else b
    lu = Factored(ctx, a)
    _check_info(ctx, lu.info(), check_errors)
    factors, pivots = lu.factors(), lu.pivots()
    if left:
        x = lu_solve(ctx, factors, pivots, rhs)
    else:
        x = transposed(lu_solve(ctx, factors, pivots, transposed(rhs), True))
    if vector:
        x = remap(x, x.sizes[:-1], index_vars(x.ndim - 1) + (sympy.Integer(0),))
    return x, factors, pivots, lu.info()


@register_lowering(aten.linalg_inv_ex.default, family=FAMILY)
def lower_inv_ex(ctx, a, check_errors=False):
    lu = Factored(ctx, a)
    _check_info(ctx, lu.info(), check_errors)
    eye = identity_like(ctx, lu.batch, lu.n, lu.d)
    return lu_solve(ctx, lu.factors(), lu.pivots(), eye), lu.info()


@register_lowering(aten._linalg_det.default, family=FAMILY)
def lower_det(ctx, a):
    _require_square(ctx, a)
    lu = Factored(ctx, a)
    return lu.extra(1), lu.factors(), lu.pivots()


@register_lowering(aten._linalg_slogdet.default, family=FAMILY)
def lower_slogdet(ctx, a):
    _require_square(ctx, a)
    lu = Factored(ctx, a)
    return lu.extra(2), lu.extra(3), lu.factors(), lu.pivots()


@register_lowering(aten._linalg_check_errors.default, family=FAMILY)
def lower_check_errors(ctx, info, api_name, is_matrix):
    check_info(ctx, info, api_name)


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


def _check_info(ctx: LoweringContext, info: TensorValue, check_errors: bool) -> None:
    if check_errors:  # the op's name as eager's check gives it: linalg_inv_ex
        check_info(ctx, info, ctx.target.removeprefix("aten.").split(".")[0])


def _require_pivoting(ctx: LoweringContext, pivot: bool) -> None:
    if not pivot:  # eager: "LU without pivoting is not implemented on the CPU"
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       "without pivoting (PyTorch has it only on CUDA)")


def _require_square(ctx: LoweringContext, a: TensorValue) -> None:
    ctx.require(sympy.Eq(a.sizes[-1], a.sizes[-2], evaluate=False),
                "A must be batches of square matrices")
