"""The calls into the shipped dense linear algebra (kernels/linalg.cpp), overloaded by element
type in aotc_kernels.h."""
from __future__ import annotations

from ....ir.linalg import Linalg, LinalgOp
from ....ir.nodes import Buffer
from ..exprs import c_index
from . import emits


@emits(Linalg)
def linalg_call(buf: Buffer, pointer_of, workspace: str | None) -> list[str]:
    op = buf.op
    assert isinstance(op, Linalg)
    batch, rows, cols, rhs = (c_index(e) for e in (op.batch, op.rows, op.cols, op.rhs))
    ins = [pointer_of(name) for name in op.operands]
    out = pointer_of(buf.name)
    if op.complex:  # the float buffers of pairs as std::complex (pivots stay int32)
        ins, out = [f"aotc::as_complex({p})" for p in ins], f"aotc::as_complex({out})"
    flag = {True: "1", False: "0"}
    # how a solve reads its matrix: 0 as it is, 1 transposed, 2 conjugate-transposed
    trans = "2" if op.adjoint else flag[op.trans]
    if op.op is LinalgOp.LU_SOLVE:
        args = [batch, rows, rhs, trans, *ins]
    elif op.op is LinalgOp.LDL_FACTOR and op.complex:  # complex: symmetric or Hermitian
        args = [batch, rows, flag[op.hermitian], *ins]
    elif op.op is LinalgOp.LDL_SOLVE and op.complex:
        args = [batch, rows, rhs, flag[op.hermitian], *ins]
    elif op.op in (LinalgOp.CHOLESKY, LinalgOp.EIGH, LinalgOp.MATRIX_EXP, LinalgOp.LDL_FACTOR):
        args = [batch, rows, *ins]
    elif op.op is LinalgOp.TRIANGULAR_SOLVE:
        args = [batch, rows, rhs, flag[op.lower], trans, flag[op.unit], *ins]
    elif op.op is LinalgOp.HOUSEHOLDER_PRODUCT:
        args = [batch, rows, cols, rhs, c_index(op.stride), *ins]
    elif op.op is LinalgOp.LDL_SOLVE:
        args = [batch, rows, rhs, *ins]
    elif op.op is LinalgOp.SVD:
        args = [batch, rows, cols, flag[op.full], flag[op.vectors], *ins]
    elif op.op is LinalgOp.EIG:
        args = [batch, rows, flag[op.vectors], *ins]
    elif op.op is LinalgOp.ORMQR:
        args = [batch, rows, cols, rhs, flag[op.left], trans, *ins]  # Q^H: 2
    else:  # LU_FACTOR-shaped: LU_PERMUTATION, GEQRF
        args = [batch, rows, cols, *ins]
    return [f"aotc::{op.op.value}({', '.join(args + [out])});"]
