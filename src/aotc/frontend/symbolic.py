"""Symbolic values at the edges of a program: int inputs that export kept symbolic (a
0-dim int64 input whose value binds a shape symbol), `.item()` values (unbacked symbols,
bound from the inputs' data) and SymInt/SymFloat/SymBool outputs (a 0-dim buffer
computed from the bound symbols, returned as a Python number)."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import CompileError
from ..ir.expr import (
    Binary,
    BinaryOp,
    Cast,
    Constant,
    IndexValue,
    Load,
    Node,
)
from ..ir.nodes import Buffer, BufferKind, InputSpec, Program
from ..lowering import LoweringContext, TensorValue
from ..lowering.compress import over_inputs

ITEM_OPS = frozenset({torch.ops.aten.item.default, torch.ops.aten._local_scalar_dense.default})

_RELATIONS = {sympy.StrictGreaterThan: BinaryOp.GT, sympy.GreaterThan: BinaryOp.GE,
              sympy.StrictLessThan: BinaryOp.LT, sympy.LessThan: BinaryOp.LE,
              sympy.Equality: BinaryOp.EQ, sympy.Unequality: BinaryOp.NE}


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
    if isinstance(e, sympy.logic.boolalg.BooleanAtom):
        return Binary(BinaryOp.EQ, IndexValue(sympy.Integer(int(bool(e))), DType.int64),
                      IndexValue(sympy.Integer(1), DType.int64), DType.bool), "bool"
    op = next((o for cls, o in _RELATIONS.items() if isinstance(e, cls)), None)
    if op is not None:
        a, b = (_number(x, what) for x in e.args)
        dtype = DType.float64 if DType.float64 in (a.dtype, b.dtype) else DType.int64
        return Binary(op, _as(a, dtype), _as(b, dtype), DType.bool), "bool"
    node = _number(e, what)
    return node, ("int" if node.dtype is DType.int64 else "float")


def _number(e: sympy.Basic, what: str) -> Node:
    """An int64 value for an integer expression, else float64 (sums, products, powers and
    true divisions of integer expressions and float constants)."""
    from torch.utils._sympy import functions as tf

    F64 = DType.float64
    if not isinstance(e, sympy.Expr):
        raise CompileError(f"output {what} is the symbolic value {e}, which aotc cannot "
                           "compute at run time")
    if e.is_integer and not e.has(tf.IntTrueDiv, tf.FloatTrueDiv, tf.ToFloat):
        return IndexValue(e, DType.int64)
    if e.is_number:
        return Constant(float(e), F64)
    if isinstance(e, (tf.IntTrueDiv, tf.FloatTrueDiv)) or (
            isinstance(e, sympy.Pow) and e.exp == -1):
        a, b = (e.args if not isinstance(e, sympy.Pow) else (sympy.Integer(1), e.base))
        return Binary(BinaryOp.DIV, _as(_number(a, what), F64), _as(_number(b, what), F64), F64)
    if isinstance(e, tf.ToFloat):
        return _as(_number(e.args[0], what), F64)
    if isinstance(e, (sympy.Add, sympy.Mul)):
        op = BinaryOp.ADD if isinstance(e, sympy.Add) else BinaryOp.MUL
        out = _as(_number(e.args[0], what), F64)
        for x in e.args[1:]:
            out = Binary(op, out, _as(_number(x, what), F64), F64)
        return out
    raise CompileError(f"output {what} is the symbolic value {e}, which aotc cannot compute "
                       "at run time")


def _as(x: Node, dtype: DType) -> Node:
    return x if x.dtype is dtype else Cast(x, dtype)


def symbolic_condition(e: sympy.Basic, what: str) -> Node:
    """A SymBool as a bool value computed from the bound symbols."""
    node, kind = _value(e, what)
    if kind != "bool":
        raise CompileError(f"{what} is {e}, not a condition")
    return node
