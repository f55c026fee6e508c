"""The template protocol: a template states its reads and workspace, and fusion, the memory
plan and codegen follow from that alone (no pass names a template class)."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
import sympy

from aotc.codegen.cpp.templates import template_call
from aotc.dtypes import DType
from aotc.errors import CompileError
from aotc.ir.expr import Binary, BinaryOp, Constant, Load
from aotc.ir.nodes import Buffer, BufferKind, Pointwise, Program, Template
from aotc.ir.printer import format_program
from aotc.ir.symbols import index_vars
from aotc.scheduler.fusion import fuse_pointwise
from aotc.scheduler.memory import plan_memory

F32 = DType.float32
N = sympy.Symbol("s0", integer=True, positive=True)


@dataclass(frozen=True)
class Scale(Template):
    """A toy template: out = 2 * x, with a scratch of n floats."""

    x: str
    n: sympy.Expr

    def reads(self) -> tuple[str, ...]:
        return (self.x,)

    def workspace(self) -> sympy.Expr:
        return 4 * self.n

    def describe(self) -> str:
        return f"scale {self.x} (scratch {self.n} floats)"


def _program() -> Program:
    """x -> a = x + 1 (pointwise, one reader: the template) -> t = scale(a) -> out = t + 1."""
    p = Program(symbols={N: (1, None)})
    iv = index_vars(1)
    p.add(Buffer("x", F32, (N,), BufferKind.INPUT))
    one = Constant(1.0, F32)
    p.add(Buffer("a", F32, (N,), BufferKind.COMPUTED,
                 Pointwise(Binary(BinaryOp.ADD, Load("x", iv, F32), one, F32))))
    p.add(Buffer("t", F32, (N,), BufferKind.COMPUTED, Scale("a", N)))
    p.add(Buffer("out", F32, (N,), BufferKind.COMPUTED,
                 Pointwise(Binary(BinaryOp.ADD, Load("t", iv, F32), one, F32))))
    p.outputs.append("out")
    return p


def test_template_reads_stay_materialized_and_print():
    p = fuse_pointwise(_program())
    # `a` has one reader, but a kernel reads it in place: it is not inlined
    assert format_program(p) == (
        "x: float32[s0] = input\n"
        "a: float32[s0] = pointwise add(x[i0], 1.0:float32)\n"
        "t: float32[s0] = scale a (scratch s0 floats)\n"
        "out: float32[s0] = pointwise add(t[i0], 1.0:float32)\n"
        "outputs: out\n")


def test_workspace_gets_a_slot_apart_from_live_buffers():
    p = fuse_pointwise(_program())
    plan = plan_memory(p)
    ws = plan.workspace_of["t"]
    # the scratch overlaps neither the operand it reads nor the buffer it writes
    assert ws not in (plan.slot_of["a"], plan.slot_of["t"])
    assert plan.slots[ws] == 4 * N
    assert len(plan.slots) == 3  # a, the scratch, t


def test_a_template_without_emitter_is_a_compile_error():
    buf = _program().buffers["t"]
    with pytest.raises(CompileError, match="no C\\+\\+ emitter for template Scale"):
        template_call(buf, lambda n: n, "ws")
