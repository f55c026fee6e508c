"""Symbolic values at the edges of a program: int inputs that export kept symbolic (a
0-dim int64 input whose value binds a shape symbol), `.item()` values (unbacked symbols,
bound from the inputs' data) and SymInt/SymFloat/SymBool outputs (a 0-dim buffer
computed from the bound symbols, returned as a Python number)."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import CompileError
from ..ir.expr import Cast, Load, Node
from ..ir.nodes import Buffer, BufferKind, InputSpec, Program
from ..ir.scalars import SymbolicScalarError, scalar_value
from ..lowering import LoweringContext, TensorValue
from ..lowering.compress import over_inputs

ITEM_OPS = frozenset({torch.ops.aten.item.default, torch.ops.aten._local_scalar_dense.default})


def import_symbolic_int(program: Program, name: str, symbol: sympy.Symbol) -> sympy.Symbol:
    """An int input: a 0-dim int64 input buffer whose value binds `symbol` at run time."""
    buf = program.add(Buffer("in_" + name, DType.int64, (), BufferKind.INPUT))
    program.inputs.append(InputSpec(name, buf.name))
    program.scalar_inputs[buf.name] = symbol
    return symbol


def import_item(program: Program, value: TensorValue, symbol: sympy.Expr, where: str
                ) -> sympy.Expr:
    """`value.item()` as the symbol export gave it: bound with the inputs when it is
    computed pointwise from them, else right after the kernel computing it (ir/binding.py)."""
    if not symbol.is_Symbol:
        return symbol  # export already knows it as an expression of other symbols
    element = value.load((0,) * value.ndim)
    body = over_inputs(program, element)
    if body is None:  # a reduction, a matmul, a constant: a 0-dim buffer read during the run
        ctx = LoweringContext(program, f"item_{symbol.name}", "item", (), DType.int64)
        name = ctx.pointwise(cast_int(element), ()).buffer_name()
        assert name is not None
        body = Load(name, (), DType.int64)
    program.item_symbols[symbol] = cast_int(body)
    program.symbols.setdefault(symbol, (-(2**62), None))
    return symbol


def cast_int(e: Node) -> Node:
    return e if e.dtype is DType.int64 else Cast(e, DType.int64)


def symbolic_output(program: Program, hint: str, value: sympy.Basic, what: str
                    ) -> tuple[str, str]:
    """(a 0-dim buffer holding `value` at run time, the Python type it returns as)."""
    body, kind = _value(value, what)
    ctx = LoweringContext(program, hint, "symbolic output", (), body.dtype)
    name = ctx.pointwise(body, ()).buffer_name()
    assert name is not None
    return name, kind


def _value(e: sympy.Basic, what: str) -> tuple[Node, str]:
    try:
        node = scalar_value(e)
    except SymbolicScalarError as err:
        raise CompileError(f"{what}: {err}") from None
    return node, {DType.bool: "bool", DType.int64: "int"}.get(node.dtype, "float")


def symbolic_condition(e: sympy.Basic, what: str) -> Node:
    """A SymBool as a bool value computed from the bound symbols."""
    node, kind = _value(e, what)
    if kind != "bool":
        raise CompileError(f"{what} is {e}, not a condition")
    return node
