"""The dense linear-algebra template: one of the shipped kernels of kernels/linalg*.cpp over
a batch of contiguous row-major matrices (codegen: codegen/cpp/templates/linalg.py; the ops
built on it: lowering/linalg_*.py)."""
from __future__ import annotations

import enum
from dataclasses import dataclass

import sympy

from .nodes import Template
from .symbols import FloorDiv

LU_EXTRA = 4  # values after a matrix's factors and pivots: info, det, sign, log |det|


class LinalgOp(enum.Enum):
    """Which kernel, and what `operands`, `rows`, `cols` and `rhs` mean for it."""

    # operands (a,): a [batch, rows, cols] factored; out per matrix: rows*cols factors,
    # min(rows, cols) pivots (1-based, as values), then LU_EXTRA values
    LU_FACTOR = "lu_factor"
    # operands (lu, pivots int32, b): x [batch, rows, rhs] solving A x = b (A^T with trans)
    LU_SOLVE = "lu_solve"
    # operands (a,): the lower factor of a [batch, rows, rows] from its lower triangle;
    # out per matrix: rows*rows values, then info
    CHOLESKY = "cholesky"
    # operands (a, b): x [batch, rows, rhs] solving T x = b, T a's lower (or upper) triangle,
    # transposed with trans, unit diagonal with unit
    TRIANGULAR_SOLVE = "triangular_solve"
    # operands (pivots int32 [batch, cols],): the [batch, rows, rows] permutation matrices
    LU_PERMUTATION = "lu_permutation"
    # operands (a,): Householder QR of a [batch, rows, cols]; out per matrix: rows*cols values
    # (R and the reflectors, as LAPACK's geqrf), then min(rows, cols) taus
    GEQRF = "geqrf"
    # operands (v [batch, rows, stride], tau [batch, rhs]): the first cols columns of
    # Q = H_0 ... H_{rhs-1}, [batch, rows, cols]
    HOUSEHOLDER_PRODUCT = "householder_product"
    # operands (v, tau [batch, rhs], c [batch, rows, cols]): Q c (left) or c Q, Q^T with trans
    # (Q^H with adjoint, complex)
    ORMQR = "ormqr"
    # operands (a,): symmetric (Hermitian, complex) eigen of a [batch, rows, rows] from its
    # lower triangle; out per matrix: rows eigenvalues ascending (real: a complex kernel
    # writes (value, 0)), then rows*rows eigenvectors (column j: vector j)
    EIGH = "eigh"
    # operands (a,): singular value decomposition of a [batch, rows, cols] (kernels/
    # linalg_svd.cpp), k = min(rows, cols); out per matrix: k singular values descending, then
    # with `vectors` U [rows, full ? rows : k] and Vh [full ? cols : k, cols]
    SVD = "svd"
    # operands (a,): the exponential of each a [batch, rows, rows] (kernels/linalg_expm.cpp)
    MATRIX_EXP = "matrix_exp"
    # operands (a,): Bunch-Kaufman LDL^T of a [batch, rows, rows] from its lower triangle
    # (kernels/linalg_ldl.cpp); out per matrix: rows*rows values LD, rows pivots (1-based, a
    # 2x2 block's both -p, as values), then info
    LDL_FACTOR = "ldl_factor"
    # operands (ld, pivots int32, b): x [batch, rows, rhs] solving A x = b
    LDL_SOLVE = "ldl_solve"
    # operands (a,): general (non-symmetric) eigen decomposition of a [batch, rows, rows]
    # (kernels/linalg_eig.cpp); out per matrix, complex values as (re, im) pairs: rows
    # eigenvalues (2*rows values), then with `vectors` the rows x rows eigenvectors (column j:
    # vector j; 2*rows*rows values); of a complex `a` (pairs) the same layout
    EIG = "eig"


@dataclass(frozen=True)
class Linalg(Template):
    """A dense linear-algebra kernel; the output buffer is contiguous, its layout as `op`
    says. A kernel with several results (factors, pivots, info) writes them all into its
    one buffer, each matrix's after the other, and the lowering reads them back as views."""

    op: LinalgOp
    operands: tuple[str, ...]
    batch: sympy.Expr
    rows: sympy.Expr
    cols: sympy.Expr = sympy.Integer(0)
    rhs: sympy.Expr = sympy.Integer(0)
    lower: bool = False
    trans: bool = False
    unit: bool = False
    left: bool = True
    stride: sympy.Expr = sympy.Integer(0)
    full: bool = False  # SVD: full_matrices
    vectors: bool = True  # SVD, EIG: the singular vectors (the eigenvectors) too
    # complex64 / complex128 matrices: buffers of (real, imag) pairs (a last dim of 2), the
    # kernel's complex variant; `adjoint`: a solve reads A^H (with `trans` false)
    complex: bool = False
    adjoint: bool = False
    # LDL_FACTOR, LDL_SOLVE of complex matrices: Hermitian (A = L D L^H), else complex
    # symmetric (A = L D L^T)
    hermitian: bool = False

    def reads(self) -> tuple[str, ...]:
        return self.operands

    def describe(self) -> str:
        flags = [f for f, on in (("complex", self.complex), ("lower", self.lower),
                                 ("transposed", self.trans), ("adjoint", self.adjoint),
                                 ("hermitian", self.hermitian),
                                 ("unit diagonal", self.unit),
                                 ("from the right", not self.left),
                                 ("full matrices", self.op is LinalgOp.SVD and self.full),
                                 ("values only", self.op in (LinalgOp.SVD, LinalgOp.EIG)
                                  and not self.vectors))
                 if on]
        square = self.op in (LinalgOp.CHOLESKY, LinalgOp.EIGH, LinalgOp.MATRIX_EXP,
                             LinalgOp.LDL_FACTOR, LinalgOp.EIG, *SOLVES)
        dims = f"{self.rows}x{self.rows if square else self.cols}"
        rhs = (f", {self.rhs} right-hand sides" if self.op in SOLVES else
               f", {self.rhs} reflectors" if self.op in REFLECTIONS else "")
        more = f" ({', '.join(flags)})" if flags else ""
        return (f"{self.op.value}{more} of {', '.join(self.operands)}: {self.batch} "
                f"matrices {dims}{rhs}")

    def flops(self) -> sympy.Expr:
        n, k = self.rows, self.rhs
        if self.op is LinalgOp.LU_FACTOR:  # ~ 2/3 n^3 for a square matrix
            return self.batch * FloorDiv(2 * self.rows * self.cols * sympy.Min(self.rows,
                                                                              self.cols), 3)
        if self.op is LinalgOp.CHOLESKY:
            return self.batch * FloorDiv(n ** 3, 3)
        if self.op is LinalgOp.EIGH:  # a few Jacobi sweeps of 6 n^3 each
            return self.batch * 30 * n ** 3
        if self.op is LinalgOp.LDL_FACTOR:
            return self.batch * FloorDiv(n ** 3, 3)
        if self.op is LinalgOp.MATRIX_EXP:  # a Taylor polynomial of degree 18 and squarings
            return self.batch * 2 * 24 * n ** 3
        if self.op is LinalgOp.EIG:  # Hessenberg 10/3 n^3, then the QR sweeps (and vectors)
            return self.batch * (25 if self.vectors else 10) * n ** 3
        if self.op is LinalgOp.SVD:  # a few sweeps of 3 r c^2 each
            return self.batch * 20 * self.rows * self.cols * sympy.Min(self.rows, self.cols)
        if self.op in (LinalgOp.LU_SOLVE, LinalgOp.LDL_SOLVE):
            return self.batch * 2 * n * n * k
        if self.op is LinalgOp.TRIANGULAR_SOLVE:
            return self.batch * n * n * k
        if self.op is LinalgOp.GEQRF:  # ~ 4/3 n^3 for a square matrix
            return self.batch * 2 * self.rows * self.cols * sympy.Min(self.rows, self.cols)
        if self.op in REFLECTIONS:
            return self.batch * 4 * self.rows * self.cols * k
        return sympy.Integer(0)


SOLVES = (LinalgOp.LU_SOLVE, LinalgOp.TRIANGULAR_SOLVE, LinalgOp.LDL_SOLVE)
REFLECTIONS = (LinalgOp.HOUSEHOLDER_PRODUCT, LinalgOp.ORMQR)
