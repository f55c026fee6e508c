"""The calls into the shipped Fourier transforms (kernels/fft.cpp), overloaded by element
type in aotc_kernels.h."""
from __future__ import annotations

from ....ir.fft import Fft, FftKind
from ....ir.nodes import Buffer
from ..exprs import c_index
from . import emits


@emits(Fft)
def fft_call(buf: Buffer, pointer_of, workspace: str | None) -> list[str]:
    op = buf.op
    assert isinstance(op, Fft)
    outer, length, inner, spectrum = (c_index(e) for e in (op.outer, op.length, op.inner,
                                                           op.spectrum))
    if op.kind is FftKind.C2C:
        sizes = [outer, length, inner, "1" if op.inverse else "0"]
    elif op.kind is FftKind.R2C:
        sizes = [outer, length, inner, spectrum]
    else:
        sizes = [outer, spectrum, inner, length]
    args = sizes + [str(int(op.norm)), c_index(op.norm_size), pointer_of(op.x),
                    pointer_of(buf.name)]
    return [
        f"if (aotc::fft_{op.kind.value}({', '.join(args)}) != 0)",
        f'  return aotc::fail(AOTC_ERR_MEMORY, "fft {buf.name}: out of memory for its '
        'scratch");',
    ]
