"""C++ text of index expressions (sympy) and of loop bodies (the expression DAG, with CSE)."""
from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar

import sympy

from ...dtypes import DType
from ...errors import CompileError
from ...ir.expr import (
    Binary,
    Cast,
    Constant,
    IndexValue,
    IndirectLoad,
    Load,
    Node,
    Unary,
    Where,
    children,
    indirect_var,
)
from ...ir.symbols import FloorDiv, ModIndex, flat_offset, simplify_index, value_range
from . import ops

# The ranges of the program's shape symbols while its code is written: a division whose
# divisor they prove positive is a plain C `/` or `%`; any other one goes through a helper
# that does not trap on zero (SIGFPE would kill the caller's process).
_SYMBOLS: ContextVar[dict | None] = ContextVar("symbol_ranges", default=None)
# Inside a condition export recorded (a guard, a torch._check): the name of the C bool that
# a division by zero sets (eager raises ZeroDivisionError there), and Python's floor
# semantics for operands that may be negative (an int input's value).
_ZERO_FLAG: ContextVar[str | None] = ContextVar("zero_flag", default=None)


@contextmanager
def symbol_ranges(symbols: dict):
    """Write index expressions knowing each shape symbol's (min, max)."""
    token = _SYMBOLS.set(symbols)
    try:
        yield
    finally:
        _SYMBOLS.reset(token)


def divides_maybe_by_zero(e) -> bool:
    """Whether expression `e` divides by something its symbols' ranges allow to be 0."""
    return any(value_range(d.args[1], _SYMBOLS.get() or {})[0] < 1
               for d in sympy.sympify(e).atoms(FloorDiv, ModIndex))


def c_checked_condition(c, zero_flag: str) -> str:
    """c_condition for a condition export recorded: each division whose divisor may be 0
    sets `zero_flag` (and gives 0) instead of trapping, and operands that may be negative
    divide with Python's floor semantics, as the guard's Python does."""
    token = _ZERO_FLAG.set(zero_flag)
    try:
        return c_condition(c)
    finally:
        _ZERO_FLAG.reset(token)


def _c_division(e) -> str:
    """a // b or a % b (FloorDiv, ModIndex): the plain C operator where the ranges prove
    b >= 1 (and, in a recorded condition, a >= 0); else a helper that gives 0 for b == 0."""
    a, b = e.args
    symbols, flag = _SYMBOLS.get() or {}, _ZERO_FLAG.get()
    op = "/" if isinstance(e, FloorDiv) else "%"
    positive = value_range(b, symbols)[0] >= 1
    if positive and (flag is None or value_range(a, symbols)[0] >= 0):
        return f"({c_index(a)}) {op} {_paren(b)}"
    name = "idiv" if isinstance(e, FloorDiv) else "imod"
    if flag is None:  # an index or a size: non-negative a, b >= 1 wherever it is read
        return f"aotc::{name}({c_index(a)}, {c_index(b)})"
    return f"aotc::guard_{name}({c_index(a)}, {c_index(b)}, {flag})"


def c_index(e) -> str:
    """An int64 C++ expression for a sympy integer expression."""
    e = sympy.sympify(e)
    if e.is_Integer:
        return str(int(e))
    if e.is_Symbol:
        return e.name
    if isinstance(e, sympy.Add):
        terms = sorted(e.args, key=lambda t: (t.is_number, str(t)))
        out = c_index(terms[0])
        for t in terms[1:]:
            if t.could_extract_minus_sign():
                out += f" - {c_index(-t)}"
            else:
                out += f" + {c_index(t)}"
        return out
    if isinstance(e, sympy.Mul):
        coeff, rest = e.as_coeff_Mul()
        if coeff == -1:
            return f"-{_paren(rest)}"
        factors = [f for f in e.args]
        return "*".join(_paren(f) for f in factors)
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) > 0:
        return "*".join([_paren(e.base)] * int(e.exp))
    if isinstance(e, (FloorDiv, ModIndex)):
        return _c_division(e)
    if isinstance(e, (sympy.Min, sympy.Max)):
        # by value: std::min's references keep a clamped gather index out of vectors
        fn = "aotc::imin" if isinstance(e, sympy.Min) else "aotc::imax"
        args = [c_index(a) for a in e.args]
        out = args[0]
        for a in args[1:]:
            out = f"{fn}({out}, {a})"
        return out
    if isinstance(e, sympy.Piecewise):  # (value, condition) pairs, the last one `True`
        out = c_index(e.args[-1][0])
        for value, cond in reversed(e.args[:-1]):
            out = f"({c_condition(cond)} ? {c_index(value)} : {out})"
        return out
    return _c_symbolic(e)


def _c_symbolic(e) -> str:
    """A size computed with Python's number semantics (`arange(0.5, n, 1.5)` has
    ceil((n - 0.5) / 1.5) elements): the expression as a scalar DAG (ir/scalars.py)."""
    from ...ir.scalars import SymbolicScalarError, scalar_value

    try:
        node = scalar_value(e)
    except SymbolicScalarError as err:
        raise CompileError(f"the size or index {e} has no C++ form: {err}") from None
    if isinstance(node, IndexValue) or node.dtype is not DType.int64:
        raise CompileError(f"the size or index {e} has no C++ form")
    return f"({c_scalar(node)})"


def c_cast(e: Cast, emit) -> str:
    """C++ text of cast `e`, its operands written by `emit`."""
    if e.dtype is DType.bool:
        return f"({emit(e.x)} != 0)"
    t, x = e.dtype.compute.ctype, e.x
    if (e.dtype.is_floating and isinstance(x, Cast) and not x.dtype.is_floating
            and x.dtype is not DType.bool and x.x.dtype.is_floating):
        # float(int(v)): g++ folds it into trunc(v), which is -0.0 for v in (-1, 0) where
        # eager gives +0.0, and drops a `+ 0` it believes changes nothing; written as
        # trunc(v) + 0, the sum makes the zero positive
        return f"(std::trunc(static_cast<{t}>({emit(x.x)})) + {t}(0))"
    return f"static_cast<{t}>({emit(x)})"


def c_scalar(e: Node) -> str:
    """C++ text of a scalar DAG over the bound symbols only (no loads, no loop variables)."""
    if isinstance(e, Constant):
        return ops.literal(e.value, e.dtype)
    if isinstance(e, IndexValue):
        return f"{e.dtype.compute.ctype}({c_index(e.expr)})"
    if isinstance(e, Unary):
        return ops.unary(e.op, c_scalar(e.x), e.dtype.compute)
    if isinstance(e, Binary):
        return f"({ops.binary(e.op, c_scalar(e.a), c_scalar(e.b), e.dtype.compute)})"
    if isinstance(e, Where):
        return f"({c_scalar(e.cond)} ? {c_scalar(e.a)} : {c_scalar(e.b)})"
    if isinstance(e, Cast):
        return c_cast(e, c_scalar)
    raise CompileError(f"{e!r} is not a scalar over the bound symbols")


_RELATIONS = {sympy.StrictLessThan: "<", sympy.LessThan: "<=", sympy.StrictGreaterThan: ">",
              sympy.GreaterThan: ">=", sympy.Equality: "==", sympy.Unequality: "!="}


def c_condition(c) -> str:
    """A C++ bool expression for a sympy condition over integer symbols."""
    if c is sympy.true:
        return "true"
    if c is sympy.false:
        return "false"
    if isinstance(c, sympy.Not):
        return f"!({c_condition(c.args[0])})"
    if isinstance(c, sympy.And):
        return " && ".join(f"({c_condition(a)})" for a in c.args)
    if isinstance(c, sympy.Or):
        return " || ".join(f"({c_condition(a)})" for a in c.args)
    op = _RELATIONS.get(type(c))
    if op is None:
        raise NotImplementedError(f"condition {c} has no C++ form")
    # integers only: sympy may have divided through (7*h < 256 becomes h < 256/7)
    num, den = sympy.fraction(sympy.together(c.lhs - c.rhs))
    if not (den.is_number and den > 0):
        raise NotImplementedError(f"condition {c} has no integer C++ form")
    return f"{c_index(sympy.expand(num))} {op} 0"


def narrow_gather(offset, sizes) -> bool:
    """Whether a load's offset is clamped (a padded window's Min/Max) inside a buffer of
    fewer than 2**31 static elements: computed in 32 bits it vectorizes as a gather, which
    g++ does not do for a 64-bit one."""
    e = sympy.sympify(offset)
    if not e.has(sympy.Min, sympy.Max):
        return False
    total = sympy.Mul(*sizes)
    return bool(total.is_number) and int(total) < 2**31


def _narrowed(offset) -> str:
    """A narrow_gather offset in C. When the innermost index variable (the highest-numbered
    i<k>, the one a kernel's inner loop runs over) appears outside every clamp, only the
    clamped terms are computed in 32 bits and the rest stays a plain affine sum, so that a
    row read at unit stride under a clamped outer index (a pooling pass over rows) stays one
    vector load rather than a gather; otherwise the whole offset is 32-bit (the gather)."""
    e = sympy.expand(sympy.sympify(offset))
    terms = sympy.Add.make_args(e)
    clamped = sympy.Add(*[t for t in terms if t.has(sympy.Min, sympy.Max)])
    rest = sympy.Add(*[t for t in terms if not t.has(sympy.Min, sympy.Max)])
    index = [s for s in e.free_symbols if re.fullmatch(r"i\d+", s.name)]
    inner = max(index, key=lambda s: int(s.name[1:]), default=None)
    if inner is None or inner not in rest.free_symbols or clamped.has(inner):
        return f"int32_t({c_index(e)})"
    return f"int32_t({c_index(clamped)}) + {_paren(rest)}"


def _surely_nonempty(sizes) -> bool:
    return all(sympy.sympify(s).is_Integer and int(s) > 0 for s in sizes)


def _clamped_on_dynamic_dim(index, sizes) -> bool:
    """Whether some axis of a load is clamped (min/max: the speculative read of a cat part
    or a padded window) in a dim whose size is symbolic, so possibly 0 at run time: the
    clamp then has no element to land on."""
    return any(sympy.sympify(i).has(sympy.Min, sympy.Max) and not sympy.sympify(n).is_Integer
               for i, n in zip(index, sizes))


def _paren(e) -> str:
    text = c_index(e)
    e = sympy.sympify(e)
    return text if (e.is_Atom or isinstance(e, (sympy.Min, sympy.Max))) else f"({text})"


class BodyEmitter:
    """Emits one statement per DAG node (`const T tN = ...;`), each node once (CSE)."""

    def __init__(self, buffer_sizes: dict[str, tuple], pointer_of, scalars=None):
        self.sizes = buffer_sizes
        self.pointer_of = pointer_of  # buffer name -> C++ name of its pointer in the kernel
        self.scalars = {} if scalars is None else scalars  # buffer -> local (row groups)
        self.names: dict[Node, str] = {}
        self.lines: list[str] = []
        self.checks_bounds = False  # set once an indirect load needs the `oob` flag
        # (substitution, ranges): loop variables the kernel loops over in another form, and
        # the ranges that simplify a direct load's flat offset once substituted
        self.offset_form: tuple[dict, dict] | None = None

    def value(self, e: Node) -> str:
        if e in self.names:
            return self.names[e]
        if isinstance(e, Constant):
            return ops.literal(e.value, e.dtype)
        for k in children(e):
            self.value(k)
        text = self._text(e)
        if not isinstance(e, (Load, IndirectLoad)):  # a loaded half value is already exact
            text = ops.rounded(text, e.dtype)  # each half op rounds its result, as in eager
        name = f"t{len(self.names)}"
        self.names[e] = name
        self.lines.append(f"const {e.dtype.compute.ctype} {name} = {text};")
        return name

    def _text(self, e: Node) -> str:
        v = self.value
        if isinstance(e, IndirectLoad):
            return self._indirect(e)
        if isinstance(e, Load) and e.buffer in self.scalars:
            return self.scalars[e.buffer]
        if isinstance(e, Load):
            off = flat_offset(e.index, self.sizes[e.buffer])
            if self.offset_form is not None:
                mapping, ranges = self.offset_form
                off = simplify_index(sympy.sympify(off).xreplace(mapping), ranges)
            text = c_index(off)
            if narrow_gather(off, self.sizes[e.buffer]):
                # only the clamped terms in 32 bits: the others stay a plain affine sum, so
                # that a row read at unit stride under a clamped outer index (a pooling
                # window's row) stays one vector load rather than a gather
                text = _narrowed(off)
            return self._guarded(e, f"{self.pointer_of(e.buffer)}[{text}]",
                                 _clamped_on_dynamic_dim(e.index, self.sizes[e.buffer]))
        if isinstance(e, IndexValue):
            return f"{e.dtype.compute.ctype}({c_index(e.expr)})"
        if isinstance(e, Unary):
            return ops.unary(e.op, v(e.x), e.dtype.compute)
        if isinstance(e, Binary) and e.op in ops.IN_STORAGE_TYPE and e.dtype is not e.dtype.compute:
            t = e.dtype.ctype  # an op on the half type's own bits: computed in that type
            return f"float({ops.binary(e.op, f'{t}({v(e.a)})', f'{t}({v(e.b)})', e.dtype)})"
        if isinstance(e, Binary) and ops.bounded_by_constant(e):
            return ops.bound(e.op, v(e.a), v(e.b))
        if isinstance(e, Binary):
            return ops.binary(e.op, v(e.a), v(e.b), e.dtype.compute)
        if isinstance(e, Where):
            return f"{v(e.cond)} ? {v(e.a)} : {v(e.b)}"
        if isinstance(e, Cast):
            return c_cast(e, v)
        raise TypeError(f"cannot emit {e!r}")

    def bind_indirect(self, indirect, bounds, wrap: bool, prefix: str) -> tuple[dict, list[str]]:
        """Emit `int64_t <prefix>j = <value>;` for each data-dependent index (negative ones
        counted from the end where `wrap`); returns ({ind<j>: its symbol}, the C test of each
        index being out of range)."""
        names, outside = {}, []
        for j, (node, bound) in enumerate(zip(indirect, bounds)):
            ix = f"{prefix}{j}"
            b = c_index(bound)
            self.lines.append(f"int64_t {ix} = {self.value(node)};")
            if wrap:
                self.lines.append(f"if ({ix} < 0) {ix} += {b};")
            outside.append(f"{ix} < 0 || {ix} >= {b}")
            names[indirect_var(j)] = sympy.Symbol(ix, integer=True)
        return names, outside

    def _indirect(self, e: IndirectLoad) -> str:
        """Wrap negative data-dependent indices where the op does, and on an index out of
        range raise the kernel's `oob` flag and read element 0 instead (never out of bounds)."""
        names, outside = self.bind_indirect(e.indirect, e.bounds, e.wrap, f"ix{len(self.names)}_")
        for ix, test in zip(names.values(), outside):
            self.lines.append(f"if ({test}) {{ __atomic_store_n(oob, 1, __ATOMIC_RELAXED); "
                              f"{ix} = 0; }}")
            self.checks_bounds = True
        index = tuple(sympy.sympify(i).xreplace(names) for i in e.index)
        sizes = self.sizes[e.buffer]
        text = f"{self.pointer_of(e.buffer)}[{c_index(flat_offset(index, sizes))}]"
        return self._guarded(e, text, not _surely_nonempty(sizes))

    def _guarded(self, e: Load | IndirectLoad, text: str, risky: bool) -> str:
        """A read that the body makes whether or not its value is used (the branch of a
        select not taken, an index out of range read as element 0): from a buffer that can
        be empty at run time (a dynamic dim of size 0) there is no element to read, and a
        clamped index even goes below 0, so the read is made only when the buffer holds
        elements (a loop-invariant test: the loop is unswitched or the load masked)."""
        if not risky:
            return text
        ctype = e.dtype.compute.ctype
        count = c_index(sympy.Mul(*self.sizes[e.buffer]))
        return f"({count} > 0 ? static_cast<{ctype}>({text}) : {ctype}(0))"
