"""Scalars that are symbolic expressions: a value computed at run time from the bound symbols.

A scalar operand of an op (`torch.full((n,), x.shape[0] / x.shape[1])`, `x * n`,
`torch.arange(n // 2, n)`, `x.clamp(max=sym_sqrt(n))`) or a SymInt/SymFloat/SymBool output
is a sympy expression over the export's shape symbols (and bound `.item()` values). It
becomes an expression DAG of the IR built from `IndexValue`s of those symbols, with
Python's number semantics: a SymInt expression is an int64, a SymFloat one a float64 (true
division of ints gives a float, `sym_float` converts, `//` and `%` round toward -inf,
`sym_int` truncates, `round` goes half to even); a condition is a bool. The caller casts the
result to the dtype the op computes in, as eager converts the Python number.
"""
from __future__ import annotations

import sympy

from ..dtypes import DType
from .expr import Binary, BinaryOp, Cast, Constant, IndexValue, Node, Unary, UnaryOp, Where

I64, F64, BOOL = DType.int64, DType.float64, DType.bool


class SymbolicScalarError(ValueError):
    """A sympy expression with no run-time form here (callers turn it into a CompileError
    naming where it came from)."""


def is_symbolic(value) -> bool:
    """Whether `value` is a sympy expression whose value is only known at run time."""
    return isinstance(value, sympy.Basic) and not (
        getattr(value, "is_number", False) or isinstance(value, sympy.logic.boolalg.BooleanAtom))


def natural_dtype(e: sympy.Basic) -> DType:
    """The Python type of a symbolic scalar, as an IR dtype: bool, int64 or float64."""
    return scalar_value(e).dtype


def scalar_value(e) -> Node:
    """The run-time value of `e` (a sympy expression, or a Python number) in its natural dtype."""
    if isinstance(e, bool) or isinstance(e, sympy.logic.boolalg.BooleanAtom):
        return Constant(bool(e), BOOL)
    if isinstance(e, int):
        return Constant(e, I64)
    if isinstance(e, float):
        return Constant(e, F64)
    e = sympy.sympify(e)
    if isinstance(e, sympy.Expr) and e.is_number:
        if e.is_Integer:
            return Constant(int(e), I64)
        if e.is_real:
            return Constant(float(e), F64)
        raise SymbolicScalarError(f"the number {e} is not real")
    if _is_index_poly(e):  # a sum of products of int symbols: one index expression
        return IndexValue(e, I64)
    return _node(e)


def as_dtype(x: Node, dtype: DType) -> Node:
    return x if x.dtype is dtype else Cast(x, dtype)


def _is_index_poly(e) -> bool:
    if e.is_Symbol:
        return bool(e.is_integer)
    if e.is_Integer:
        return True
    if isinstance(e, (sympy.Add, sympy.Mul)):
        return all(_is_index_poly(a) for a in e.args)
    if isinstance(e, sympy.Pow):
        return e.exp.is_Integer and int(e.exp) > 0 and _is_index_poly(e.base)
    return False


def _promoted(*xs: Node) -> DType:
    return F64 if any(x.dtype is F64 for x in xs) else I64


def _fold(op: BinaryOp, args) -> Node:
    xs = [scalar_value(a) for a in args]
    xs = [as_dtype(x, I64) if x.dtype is BOOL else x for x in xs]
    d = _promoted(*xs)
    out = as_dtype(xs[0], d)
    for x in xs[1:]:
        out = Binary(op, out, as_dtype(x, d), d)
    return out


def _floor_to_int(x: Node, op: UnaryOp) -> Node:
    if x.dtype is not F64:
        return as_dtype(x, I64)
    return Cast(Unary(op, x, F64), I64)


_RELATIONS = {sympy.StrictGreaterThan: BinaryOp.GT, sympy.GreaterThan: BinaryOp.GE,
              sympy.StrictLessThan: BinaryOp.LT, sympy.LessThan: BinaryOp.LE,
              sympy.Equality: BinaryOp.EQ, sympy.Unequality: BinaryOp.NE}
_LOGIC = {sympy.And: BinaryOp.AND, sympy.Or: BinaryOp.OR}


def _true_div(args) -> Node:
    a, b = (as_dtype(scalar_value(x), F64) for x in args)
    return Binary(BinaryOp.DIV, a, b, F64)


def _float_pow(args) -> Node:
    a, b = (as_dtype(scalar_value(x), F64) for x in args)
    return Binary(BinaryOp.POW, a, b, F64)


def _ceil_div(args) -> Node:  # -((-a) // b)
    a, b = (as_dtype(scalar_value(x), I64) for x in args)
    return Unary(UnaryOp.NEG, Binary(BinaryOp.FLOORDIV, Unary(UnaryOp.NEG, a, I64), b, I64), I64)


# torch's functions of symbolic shapes (torch.utils._sympy.functions) and the IR's own, by
# class name: the IR stays importable without torch
_FUNCTIONS = {
    "IntTrueDiv": _true_div, "FloatTrueDiv": _true_div,
    "PowByNatural": lambda args: _fold(BinaryOp.POW, args), "FloatPow": _float_pow,
    "FloorDiv": lambda args: _fold(BinaryOp.FLOORDIV, args),  # torch's and the IR's
    "CleanDiv": lambda args: _fold(BinaryOp.FLOORDIV, args),
    "Mod": lambda args: _fold(BinaryOp.REMAINDER, args),
    "PythonMod": lambda args: _fold(BinaryOp.REMAINDER, args),
    "ModIndex": lambda args: _fold(BinaryOp.REMAINDER, args),
    "CeilDiv": _ceil_div,
    "Max": lambda args: _fold(BinaryOp.MAXIMUM, args),
    "Min": lambda args: _fold(BinaryOp.MINIMUM, args),
    "ToFloat": lambda args: as_dtype(scalar_value(args[0]), F64),
    # sym_int / int(): toward zero, as a C cast
    "TruncToInt": lambda args: as_dtype(scalar_value(args[0]), I64),
    "TruncToFloat": lambda args: Unary(UnaryOp.TRUNC, as_dtype(scalar_value(args[0]), F64), F64),
    "FloorToInt": lambda args: _floor_to_int(scalar_value(args[0]), UnaryOp.FLOOR),
    "CeilToInt": lambda args: _floor_to_int(scalar_value(args[0]), UnaryOp.CEIL),
    "RoundToInt": lambda args: _floor_to_int(scalar_value(args[0]), UnaryOp.ROUND),  # half even
}


def _node(e: sympy.Basic) -> Node:
    name = type(e).__name__
    args = e.args
    rel = next((o for cls, o in _RELATIONS.items() if isinstance(e, cls)), None)
    if rel is not None:
        a, b = (scalar_value(x) for x in args)
        d = _promoted(a, b)
        return Binary(rel, as_dtype(a, d), as_dtype(b, d), BOOL)
    logic = next((o for cls, o in _LOGIC.items() if isinstance(e, cls)), None)
    if logic is not None:
        out = as_dtype(scalar_value(args[0]), BOOL)
        for x in args[1:]:
            out = Binary(logic, out, as_dtype(scalar_value(x), BOOL), BOOL)
        return out
    if isinstance(e, sympy.Not):
        return Unary(UnaryOp.NOT, as_dtype(scalar_value(args[0]), BOOL), BOOL)
    if isinstance(e, sympy.Symbol):
        if e.is_integer:
            return IndexValue(e, I64)
        raise SymbolicScalarError(f"the symbol {e} is not an integer")
    if name in _FUNCTIONS:
        return _FUNCTIONS[name](args)
    if isinstance(e, sympy.Add):
        return _fold(BinaryOp.ADD, args)
    if isinstance(e, sympy.Mul):
        return _fold(BinaryOp.MUL, args)
    if isinstance(e, sympy.Pow):
        base, exp = scalar_value(args[0]), scalar_value(args[1])
        if base.dtype is I64 and exp.dtype is I64 and not (args[1].is_number and args[1] < 0):
            return Binary(BinaryOp.POW, base, exp, I64)
        return Binary(BinaryOp.POW, as_dtype(base, F64), as_dtype(exp, F64), F64)
    if isinstance(e, (sympy.Max, sympy.Min)):
        return _fold(BinaryOp.MAXIMUM if isinstance(e, sympy.Max) else BinaryOp.MINIMUM, args)
    if isinstance(e, sympy.Abs):
        x = scalar_value(args[0])
        return Unary(UnaryOp.ABS, x, x.dtype)
    if isinstance(e, sympy.Piecewise):  # sym_ite: (value, condition) pairs, the last `True`
        out = scalar_value(args[-1][0])
        for value, cond in reversed(args[:-1]):
            v = scalar_value(value)
            d = _promoted(v, out)
            out = Where(as_dtype(scalar_value(cond), BOOL), as_dtype(v, d), as_dtype(out, d), d)
        return out
    if name.startswith("OpaqueUnaryFn_"):  # math.sqrt, math.exp, ... of a symbolic value
        fn = name.removeprefix("OpaqueUnaryFn_")
        op = next((u for u in UnaryOp if u.value == fn), None)
        if op is not None:
            return Unary(op, as_dtype(scalar_value(args[0]), F64), F64)
    raise SymbolicScalarError(f"the symbolic value {e} ({name}) has no run-time form in aotc")
