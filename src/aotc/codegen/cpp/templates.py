"""Calls into the shipped template kernels: one emitter per Template class.

A template states what it computes (ir/nodes.py); how it is called lives here. The run
function asks `template_call` for each template buffer's statements, so a new template
registers its emitter and touches nothing else in codegen.
"""
from __future__ import annotations

from collections.abc import Callable

import sympy

from ...dtypes import DType
from ...errors import CompileError
from ...ir.nodes import Buffer, Gemm, Template
from . import ops
from .exprs import c_index
from .kernels import describe

# (buffer, pointer_of(buffer name) -> C expression, workspace pointer or None) -> statements
Emitter = Callable[[Buffer, Callable[[str], str], str | None], list[str]]
EMITTERS: dict[type, Emitter] = {}


def emits(cls: type) -> Callable[[Emitter], Emitter]:
    def wrap(fn: Emitter) -> Emitter:
        EMITTERS[cls] = fn
        return fn
    return wrap


def template_call(buf: Buffer, pointer_of: Callable[[str], str],
                  workspace: str | None = None) -> list[str]:
    """The statements that run a template buffer's kernel (its header comment first)."""
    assert isinstance(buf.op, Template)
    emit = EMITTERS.get(type(buf.op))
    if emit is None:
        raise CompileError(f"no C++ emitter for template {type(buf.op).__name__}")
    return describe(buf) + emit(buf, pointer_of, workspace)


@emits(Gemm)
def gemm_call(buf: Buffer, pointer_of, workspace: str | None) -> list[str]:
    """The call into the shipped GEMM."""
    op = buf.op
    assert isinstance(op, Gemm)
    if buf.dtype is not DType.float32:
        raise CompileError("only float32 GEMM")

    def arg(o):
        return f"{pointer_of(o.buffer)} + {c_index(o.offset)}", [c_index(s) for s in o.strides]

    a, sa = arg(op.a)
    b, sb = arg(op.b)
    m, n = c_index(op.m), c_index(op.n)
    if op.bias is not None:
        bias, sbias = arg(op.bias)
    else:
        bias, sbias = "nullptr", ["0", "0", "0"]
    mn = c_index(sympy.expand(op.m * op.n))
    return [
        f"aotc_sgemm_batched({c_index(op.batch)}, {m}, {n}, {c_index(op.k)},",
        f"                   {a}, {', '.join(sa)},",
        f"                   {b}, {', '.join(sb)},",
        f"                   {pointer_of(buf.name)}, {mn}, {n},",
        f"                   {bias}, {', '.join(sbias)}, {ops.literal(op.alpha, DType.float32)}, "
        f"{ops.literal(op.beta, DType.float32)});",
    ]

