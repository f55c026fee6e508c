"""The ABI's view of a buffer: a complex input, constant or output is, inside the IR, a real
buffer of its (real, imag) pairs with a last dim of 2 (Program.complex_views)."""
from __future__ import annotations

import sympy

from ..dtypes import DType
from .nodes import Program


def abi_dtype(program: Program, buffer: str) -> DType:
    """The dtype callers see: complex64 for the float32 pairs of a complex64 tensor."""
    return program.complex_views.get(buffer) or program.buffers[buffer].dtype


def abi_sizes(program: Program, buffer: str) -> tuple[sympy.Expr, ...]:
    """The sizes callers see: without the pairs' last dim for a complex buffer."""
    sizes = program.buffers[buffer].sizes
    return sizes[:-1] if buffer in program.complex_views else sizes
