"""LU with partial pivoting on the shipped kernels (kernels/linalg.cpp) and what PyTorch
builds on it: lu_factor, lu, lu_unpack, lu_solve, solve, inv, det, slogdet; and the run-time
check of an `info` result (`_linalg_check_errors`: a singular matrix is an input error, as
eager raises).

A kernel writes its results into one buffer (ir/linalg.py); the factors, pivots, info and
determinant are views of it. Matrices are float32 or float64, or complex64 / complex128 as
their pairs (these rules take complex values so: `on_pairs`), batched over leading dims."""
from __future__ import annotations

import enum

import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import BinaryOp, cast
from ..ir.linalg import LU_EXTRA, Linalg, LinalgOp
from ..ir.symbols import index_vars, numel
from .context import LoweringContext, TensorValue
from .linalg_matrices import (
    I32,
    broadcast_batch,
    check_info,
    check_info_if,
    complex_matrices,
    conjugated,
    contiguous,
    identity_like,
    int32_pivots,
    kernel_dtype,
    matrix_dims,
    packed_part,
    require_square,
    transposed,
    triangle,
)
from .registry import register_lowering
from .views import remap

aten = torch.ops.aten
FAMILY = "linalg"


class Read(enum.Enum):
    """How a solve reads its matrix A."""

    AS_IS = 0
    TRANSPOSED = 1  # A^T
    ADJOINT = 2  # A^H (A^T for a real matrix)


def solve_flags(read: Read, pairs: bool) -> dict:
    """The Linalg fields for `read`: trans, or adjoint for a complex A^H."""
    return {"trans": read is Read.TRANSPOSED or (read is Read.ADJOINT and not pairs),
            "adjoint": read is Read.ADJOINT and pairs, "complex": pairs}


class Factored:
    """The LU factorization of a [*batch, m, n] as views of the kernel's one buffer."""

    def __init__(self, ctx: LoweringContext, a: TensorValue, pairs: bool = False):
        self.d = kernel_dtype(ctx, a)
        self.pairs = pairs
        t = matrix_dims(pairs)
        self.batch, self.m, self.n = a.sizes[:-t], a.sizes[-t], a.sizes[-t + 1]
        self.k = sympy.Min(self.m, self.n)
        each = self.m * self.n + self.k + LU_EXTRA
        op = Linalg(LinalgOp.LU_FACTOR, (contiguous(ctx, a, "a"),), numel(self.batch),
                    self.m, self.n, complex=pairs)
        sizes = self.batch + (each,) + ((sympy.Integer(2),) if pairs else ())
        self.packed = ctx.emit(op, sizes, self.d, hint=f"{ctx.node_name}_lu")

    def factors(self) -> TensorValue:
        return packed_part(self.packed, self.batch + (self.m, self.n), 0,
                           lambda ij: ij[0] * self.n + ij[1], pairs=self.pairs)

    def pivots(self) -> TensorValue:
        """int32, 1-based, as LAPACK's and PyTorch's."""
        return packed_part(self.packed, self.batch + (self.k,), self.m * self.n,
                           lambda j: j[0], I32, real_part=self.pairs)

    def extra(self, slot: int, dtype: DType | None = None, real: bool = True) -> TensorValue:
        """Value `slot` after the pivots: info, det, the sign of det, log |det| (complex
        for a complex matrix unless `real`)."""
        return packed_part(self.packed, self.batch, self.m * self.n + self.k + slot,
                           lambda _: 0, dtype, pairs=self.pairs and not real,
                           real_part=self.pairs and real)

    def info(self) -> TensorValue:
        return self.extra(0, I32)


def lu_solve(ctx: LoweringContext, lu: TensorValue, pivots: TensorValue, b: TensorValue,
             read: Read = Read.AS_IS, pairs: bool = False) -> TensorValue:
    """x solving A x = b (A read as `read` says) from A's factors and pivots; b [*, n, k]."""
    d = kernel_dtype(ctx, lu, b)
    lu, b, batch = broadcast_batch(ctx, lu, b, pairs)
    pivots = int32_pivots(ctx, pivots, batch)
    t = matrix_dims(pairs)
    n, k = b.sizes[-t], b.sizes[-t + 1]
    op = Linalg(LinalgOp.LU_SOLVE, (contiguous(ctx, lu, "lu"), contiguous(ctx, pivots, "pivots"),
                                    contiguous(ctx, b, "b")), numel(batch), n, rhs=k,
                **solve_flags(read, pairs))
    return ctx.emit(op, b.sizes, d, hint=f"{ctx.node_name}_x")


@register_lowering(aten.linalg_lu_factor_ex.default, family=FAMILY, on_pairs=True)
def lower_lu_factor_ex(ctx, a, pivot=True, check_errors=False):
    _require_pivoting(ctx, pivot)
    lu = Factored(ctx, a, complex_matrices(ctx))
    check_info_if(ctx, lu.info(), check_errors)
    return lu.factors(), lu.pivots(), lu.info()


@register_lowering(aten.linalg_lu.default, family=FAMILY, on_pairs=True)
def lower_lu(ctx, a, pivot=True):
    _require_pivoting(ctx, pivot)
    pairs = complex_matrices(ctx)
    lu = Factored(ctx, a, pairs)
    return unpack(ctx, lu.factors(), lu.pivots(), pairs)


@register_lowering(aten.lu_unpack.default, family=FAMILY, on_pairs=True)
def lower_lu_unpack(ctx, lu, pivots, unpack_data=True, unpack_pivots=True):
    if not (unpack_data and unpack_pivots):
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       "with unpack_data or unpack_pivots False")
    kernel_dtype(ctx, lu)
    return unpack(ctx, lu, pivots, complex_matrices(ctx))


def unpack(ctx: LoweringContext, lu: TensorValue, pivots: TensorValue, pairs: bool) -> tuple:
    """(P, L, U) with A = P L U from the factors [*, m, n] and pivots [*, min(m, n)]."""
    t = matrix_dims(pairs)
    batch, m, n = lu.sizes[:-t], lu.sizes[-t], lu.sizes[-t + 1]
    k = sympy.Min(m, n)
    lower = triangle(ctx, lu, (m, k), BinaryOp.GT, unit_diagonal=True, pairs=pairs)
    upper = triangle(ctx, lu, (k, n), BinaryOp.LE, pairs=pairs)
    if pivots.dtype is not I32:
        pivots = TensorValue(pivots.sizes, I32, cast(pivots.body, I32))
    op = Linalg(LinalgOp.LU_PERMUTATION, (contiguous(ctx, pivots, "pivots"),), numel(batch),
                m, k, complex=pairs)
    perm = ctx.emit(op, batch + (m, m) + ((sympy.Integer(2),) if pairs else ()), lu.dtype,
                    hint=f"{ctx.node_name}_p")
    return perm, lower, upper


@register_lowering(aten.linalg_lu_solve.default, family=FAMILY, on_pairs=True)
def lower_lu_solve(ctx, lu, pivots, b, left=True, adjoint=False):
    pairs = complex_matrices(ctx)
    if left:
        return lu_solve(ctx, lu, pivots, b, Read.ADJOINT if adjoint else Read.AS_IS, pairs)
    if not adjoint:  # x A = b  <=>  A^T x^T = b^T
        return transposed(lu_solve(ctx, lu, pivots, transposed(b, pairs), Read.TRANSPOSED,
                                   pairs), pairs)
    # x A^H = b  <=>  A conj(x)^T = conj(b)^T
    rhs = conjugated(ctx, transposed(b, pairs), pairs)
    return conjugated(ctx, transposed(lu_solve(ctx, lu, pivots, rhs, Read.AS_IS, pairs), pairs),
                      pairs)


@register_lowering(aten._linalg_solve_ex.default, family=FAMILY, on_pairs=True)
def lower_solve_ex(ctx, a, b, left=True, check_errors=False):
    pairs = complex_matrices(ctx)
    t = matrix_dims(pairs)
    # b is a batch of vectors when it has one dim fewer than a (torch.linalg.solve's rule)
    vector = b.ndim == t - 1 or (b.ndim == a.ndim - 1 and b.sizes[:-1] == a.sizes[:-2]
                                 if pairs else b.ndim == a.ndim - 1 and b.sizes == a.sizes[:-1])
    if vector:  # a column: [*, n] -> [*, n, 1] (before the pair dim)
        iv = index_vars(b.ndim + 1)
        sizes = b.sizes[:b.ndim - t + 2] + (sympy.Integer(1),) + b.sizes[b.ndim - t + 2:]
        rhs = remap(b, sizes, iv[:b.ndim - t + 2] + iv[b.ndim - t + 3:])
    else:
        rhs = b
    lu = Factored(ctx, a, pairs)
    check_info_if(ctx, lu.info(), check_errors)
    factors, pivots = lu.factors(), lu.pivots()
    if left:
        x = lu_solve(ctx, factors, pivots, rhs, Read.AS_IS, pairs)
    else:
        x = transposed(lu_solve(ctx, factors, pivots, transposed(rhs, pairs), Read.TRANSPOSED,
                                pairs), pairs)
    if vector:
        iv = index_vars(x.ndim - 1)
        cut = x.ndim - t + 1  # the column dim
        x = remap(x, x.sizes[:cut] + x.sizes[cut + 1:], iv[:cut] + (sympy.Integer(0),) + iv[cut:])
    return x, factors, pivots, lu.info()


@register_lowering(aten.linalg_inv_ex.default, family=FAMILY, on_pairs=True)
def lower_inv_ex(ctx, a, check_errors=False):
    pairs = complex_matrices(ctx)
    lu = Factored(ctx, a, pairs)
    check_info_if(ctx, lu.info(), check_errors)
    eye = identity_like(ctx, lu.batch, lu.n, lu.d, pairs)
    return lu_solve(ctx, lu.factors(), lu.pivots(), eye, Read.AS_IS, pairs), lu.info()


@register_lowering(aten._linalg_det.default, family=FAMILY, on_pairs=True)
def lower_det(ctx, a):
    pairs = complex_matrices(ctx)
    require_square(ctx, a, pairs)
    lu = Factored(ctx, a, pairs)
    return lu.extra(1, real=False), lu.factors(), lu.pivots()


@register_lowering(aten._linalg_slogdet.default, family=FAMILY, on_pairs=True)
def lower_slogdet(ctx, a):
    """(sign, log |det|, factors, pivots): the sign is complex for a complex matrix (det / |det|),
    log |det| real."""
    pairs = complex_matrices(ctx)
    require_square(ctx, a, pairs)
    lu = Factored(ctx, a, pairs)
    return lu.extra(2, real=False), lu.extra(3), lu.factors(), lu.pivots()


@register_lowering(aten._linalg_check_errors.default, family=FAMILY)
def lower_check_errors(ctx, info, api_name, is_matrix):
    check_info(ctx, info, api_name)


def _require_pivoting(ctx: LoweringContext, pivot: bool) -> None:
    if not pivot:  # eager: "LU without pivoting is not implemented on the CPU"
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       "without pivoting (PyTorch has it only on CUDA)")
