"""General (non-symmetric) eigen decomposition on the shipped kernel (kernels/linalg_eig.cpp):
linalg_eig (torch.linalg.eig) and linalg_eigvals, of real float32 / float64 matrices
(Hessenberg reduction and Francis double-shift QR) and of complex64 / complex128 ones
(complex Hessenberg reduction and single-shift QR). The results are complex: these rules
work on complex values as their (real, imag) pairs (`on_pairs`), a complex input arriving
so too, the kernel writing its results so. The eigenvalues of a general matrix come in no
defined order and each eigenvector is defined up to a complex phase (aotc's have unit norm
and their largest component real and positive, as LAPACK's dgeev / zgeev document), so
results agree with eager up to that order and phase, as OpInfo compares them
(tools/opsweep.py's gauge for linalg.eig)."""
from __future__ import annotations

import torch

from ..ir.linalg import Linalg, LinalgOp
from ..ir.symbols import numel
from .context import LoweringContext, TensorValue
from .linalg_matrices import complex_matrices, contiguous, kernel_dtype, matrix_dims, packed_part
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "linalg"


def eig(ctx: LoweringContext, a: TensorValue, vectors: bool
        ) -> tuple[TensorValue, TensorValue | None]:
    """(eigenvalues [*, n, 2], eigenvectors [*, n, n, 2] or None) of a [*, n, n] (real) or
    [*, n, n, 2] (complex, as pairs), as (real, imag) pairs of a's (part) dtype: views of the
    kernel's one buffer."""
    d = kernel_dtype(ctx, a)
    pairs = complex_matrices(ctx)
    t = matrix_dims(pairs)
    batch, n = a.sizes[:-t], a.sizes[-t]
    each = 2 * n + (2 * n * n if vectors else 0)
    op = Linalg(LinalgOp.EIG, (contiguous(ctx, a, "a"),), numel(batch), n, vectors=vectors,
                complex=pairs)
    packed = ctx.emit(op, batch + (each,), d, hint=f"{ctx.node_name}_eig")
    values = packed_part(packed, batch + (n, 2), 0, lambda jc: 2 * jc[0] + jc[1])
    if not vectors:
        return values, None
    return values, packed_part(packed, batch + (n, n, 2), 2 * n,
                               lambda ijc: 2 * (ijc[0] * n + ijc[1]) + ijc[2])


@register_lowering(aten.linalg_eig.default, family=FAMILY, on_pairs=True)
def lower_linalg_eig(ctx, a):
    return eig(ctx, a, True)


@register_lowering(aten.linalg_eigvals.default, family=FAMILY, on_pairs=True)
def lower_linalg_eigvals(ctx, a):
    """The eigenvalues alone: the kernel skips the Schur vectors and the back substitution
    (the values are bit for bit those linalg_eig gives)."""
    return eig(ctx, a, False)[0]
