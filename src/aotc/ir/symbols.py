"""Symbolic integers of the IR: loop index variables and integer division/modulo.

Sizes and indices are sympy expressions. Shape symbols come from torch.export
(`s0`, `s77`, ...); loop variables are `i<k>` (output axes) and `r<k>` (reduced axes).
"""
from __future__ import annotations

from functools import cache

import sympy
from sympy import Expr  # the type of sizes and indices

# The lower end of a symbol's range when export recorded none (an .item() value, an int
# input): ranges are [lo, hi] with int lo; a value at or below this one is not checked.
UNBOUNDED_BELOW = -(2**62)


@cache
def index_var(k: int) -> sympy.Symbol:
    return sympy.Symbol(f"i{k}", integer=True, nonnegative=True)


@cache
def reduction_var(k: int) -> sympy.Symbol:
    return sympy.Symbol(f"r{k}", integer=True, nonnegative=True)


def index_vars(n: int) -> tuple[sympy.Symbol, ...]:
    return tuple(index_var(k) for k in range(n))


class FloorDiv(sympy.Function):
    """a // b for non-negative a and positive b (indices only)."""

    is_integer = True
    is_nonnegative = True

    @classmethod
    def eval(cls, a, b):
        if b == 1:
            return a
        if a == 0:
            return sympy.Integer(0)
        if a.is_Integer and b.is_Integer:
            return sympy.Integer(int(a) // int(b))
        # (x*b + y) // b  ->  x + y // b  when the terms divide exactly (and y stays
        # non-negative: the C form of a // b truncates)
        if isinstance(a, sympy.Add):
            whole, rest = [], []
            for t in a.args:
                q = sympy.cancel(t / b)
                (whole if _is_integer_poly(q) else rest).append(q if _is_integer_poly(q) else t)
            if whole and (not rest or sympy.Add(*rest).is_nonnegative):
                return sympy.Add(*whole) + (cls(sympy.Add(*rest), b) if rest else 0)
        q = sympy.cancel(a / b)
        if _is_integer_poly(q):
            return q
        return None


class ModIndex(sympy.Function):
    """a % b for non-negative a and positive b (indices only)."""

    is_integer = True
    is_nonnegative = True

    @classmethod
    def eval(cls, a, b):
        if b == 1 or a == 0:
            return sympy.Integer(0)
        if a.is_Integer and b.is_Integer:
            return sympy.Integer(int(a) % int(b))
        if isinstance(a, sympy.Add):  # drop multiples of b while the rest stays >= 0
            kept = [t for t in a.args if not _is_integer_poly(sympy.cancel(t / b))]
            if len(kept) < len(a.args) and sympy.Add(*kept).is_nonnegative:
                return cls(sympy.Add(*kept), b)
        if _is_integer_poly(sympy.cancel(a / b)):
            return sympy.Integer(0)
        return None


def _is_integer_poly(e: sympy.Expr) -> bool:
    """True when e is a polynomial with integer coefficients (so an exact integer)."""
    if e.is_Integer:
        return True
    if not e.free_symbols:
        return bool(e.is_integer)
    num, den = sympy.fraction(sympy.together(e))
    if den != 1:
        return False
    try:
        poly = sympy.Poly(num, *sorted(e.free_symbols, key=str))
    except sympy.PolynomialError:
        return False
    return all(c.is_Integer for c in poly.coeffs())


def contiguous_strides(sizes: tuple[Expr, ...]) -> tuple[Expr, ...]:
    strides: list[Expr] = []
    acc: Expr = sympy.Integer(1)
    for s in reversed(sizes):
        strides.append(acc)
        acc = acc * s
    return tuple(reversed(strides))


def numel(sizes: tuple[Expr, ...]) -> Expr:
    out: Expr = sympy.Integer(1)
    for s in sizes:
        out = out * s
    return out


def flat_offset(index: tuple[Expr, ...], sizes: tuple[Expr, ...]) -> Expr:
    """Offset of a multi-index into a contiguous buffer of these sizes."""
    return sympy.expand(sum((i * s for i, s in zip(index, contiguous_strides(sizes))), sympy.Integer(0)))


def sym(x) -> Expr:
    return sympy.sympify(x)


def surely_at_least(a: Expr, b: Expr) -> bool:
    """a >= b for every value of the (non-negative) symbols: a - b is a polynomial whose
    coefficients are all non-negative."""
    diff = sympy.expand(a - b)
    if diff.is_number:
        return bool(diff >= 0)
    try:
        poly = sympy.Poly(diff, *sorted(diff.free_symbols, key=str))
    except sympy.PolynomialError:
        return False
    return all(c >= 0 for c in poly.coeffs())


def upper_bound(e: Expr, ranges: dict) -> Expr | None:
    """An upper bound of integer expression e when each var v in `ranges` is < ranges[v];
    None when e is not monotone enough to bound simply."""
    if e.is_Integer:
        return e
    if e.is_Symbol:
        return ranges[e] - 1 if e in ranges else e
    if isinstance(e, sympy.Add):
        parts = [upper_bound(t, ranges) for t in e.args]
        return None if any(p is None for p in parts) else sympy.Add(*parts)
    if isinstance(e, sympy.Mul):
        coeff, rest = e.as_coeff_Mul()
        if coeff < 0:
            return None
        factors = [upper_bound(f, ranges) for f in sympy.Mul.make_args(rest)]
        return None if any(f is None for f in factors) else coeff * sympy.Mul(*factors)
    if isinstance(e, ModIndex):
        return e.args[1] - 1
    if isinstance(e, FloorDiv):
        ub = upper_bound(e.args[0], ranges)
        return None if ub is None else ub / e.args[1]
    if isinstance(e, sympy.Min):
        bounds = [upper_bound(a, ranges) for a in e.args]
        return next((b for b in bounds if b is not None), None)
    return None


def simplify_index(e: Expr, ranges: dict) -> Expr:
    """Drop divisions and moduli that the ranges of the loop variables make trivial:
    x // n -> 0 and x % n -> x when x < n; n*(x // n) + x % n -> x."""
    e = sympy.sympify(e)
    if not e.has(FloorDiv, ModIndex):
        return e
    if isinstance(e, (FloorDiv, ModIndex)):
        a = simplify_index(e.args[0], ranges)
        b = e.args[1]
        ub = upper_bound(a, ranges)
        small = ub is not None and surely_at_least(b - 1, ub)
        if isinstance(e, FloorDiv):
            return sympy.Integer(0) if small else FloorDiv(a, b)
        return a if small else ModIndex(a, b)
    args = [simplify_index(a, ranges) for a in e.args]
    out = e.func(*args)
    if isinstance(out, sympy.Add):
        out = _merge_div_mod(out)
    return out


def _merge_div_mod(e: sympy.Add) -> Expr:
    """c*n*(x // n) + c*(x % n) -> c*x."""
    terms = list(sympy.Add.make_args(e))
    for t in terms:
        coeff, rest = t.as_coeff_Mul()
        for m in sympy.Mul.make_args(rest):
            if isinstance(m, ModIndex):
                x, n = m.args
                other = sympy.Mul(*[f for f in sympy.Mul.make_args(rest) if f is not m])
                partner = sympy.expand(coeff * other * n) * FloorDiv(x, n)
                if partner in terms:
                    rest_terms = [u for u in terms if u is not t and u != partner]
                    return _merge_div_mod_maybe(sympy.Add(*rest_terms, coeff * other * x))
    return e


def _merge_div_mod_maybe(e: Expr) -> Expr:
    return _merge_div_mod(e) if isinstance(e, sympy.Add) else e


def value_range(e, symbols: dict) -> tuple[float, float]:
    """(lowest, highest) value of integer expression `e` when each shape symbol lies in its
    range (`symbols`: symbol -> (min, max or None)); -inf/inf where unknown (a loop
    variable, an unbounded end)."""
    inf = float("inf")
    e = sympy.sympify(e)
    if e.is_Integer:
        return int(e), int(e)
    if e.is_Symbol:
        if e not in symbols:
            return (0, inf) if e.is_nonnegative else (-inf, inf)
        lo, hi = symbols[e]
        return (-inf if lo <= UNBOUNDED_BELOW else lo), (inf if hi is None else hi)
    if isinstance(e, sympy.Add):
        parts = [value_range(t, symbols) for t in e.args]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)
    if isinstance(e, sympy.Mul) or (isinstance(e, sympy.Pow) and e.exp.is_Integer and e.exp > 0):
        factors = list(e.args) if isinstance(e, sympy.Mul) else [e.base] * int(e.exp)
        lo, hi = 1, 1
        for f in factors:
            flo, fhi = value_range(f, symbols)
            # 0 * inf is 0 here: a factor pinned at 0 makes the product 0 however large the other
            corners = [0 if 0 in (a, b) else a * b for a in (lo, hi) for b in (flo, fhi)]
            lo, hi = min(corners), max(corners)
        return lo, hi
    if isinstance(e, (sympy.Min, sympy.Max)):
        parts = [value_range(a, symbols) for a in e.args]
        pick = min if isinstance(e, sympy.Min) else max
        return pick(p[0] for p in parts), pick(p[1] for p in parts)
    if isinstance(e, FloorDiv):
        (alo, ahi), (blo, bhi) = value_range(e.args[0], symbols), value_range(e.args[1], symbols)
        if blo < 1:
            return -inf, inf
        corners = [_floor_quotient(a, b) for a in (alo, ahi) for b in (blo, bhi)]
        return min(corners), max(corners)
    if isinstance(e, ModIndex):
        (alo, ahi), (blo, bhi) = value_range(e.args[0], symbols), value_range(e.args[1], symbols)
        if blo < 1:
            return -inf, inf
        if alo >= 0 and ahi < blo:
            return alo, ahi
        return 0, bhi - 1
    return -inf, inf


def _floor_quotient(a: float, b: float) -> float:
    """floor(a / b) for b >= 1, either of them possibly infinite."""
    inf = float("inf")
    if b == inf:
        return 0 if a >= 0 else (-1 if a > -inf else -inf)
    if a in (inf, -inf):
        return a
    return int(a) // int(b)


def always_holds(condition, symbols: dict) -> bool:
    """Whether a condition over shape symbols holds for every value of their ranges (an
    And of comparisons whose difference's range decides them; False when unknown)."""
    condition = sympy.sympify(condition)
    if condition is sympy.true:
        return True
    if isinstance(condition, sympy.And):
        return all(always_holds(c, symbols) for c in condition.args)
    tests = {sympy.Unequality: lambda lo, hi: lo > 0 or hi < 0,
             sympy.StrictGreaterThan: lambda lo, hi: lo > 0,
             sympy.GreaterThan: lambda lo, hi: lo >= 0,
             sympy.StrictLessThan: lambda lo, hi: hi < 0,
             sympy.LessThan: lambda lo, hi: hi <= 0,
             sympy.Equality: lambda lo, hi: lo == hi == 0}
    test = tests.get(type(condition))
    if test is None:
        return False
    return test(*value_range(sympy.expand(condition.lhs - condition.rhs), symbols))


_NEGATIONS = {sympy.StrictGreaterThan: sympy.Le, sympy.GreaterThan: sympy.Lt,
              sympy.StrictLessThan: sympy.Ge, sympy.LessThan: sympy.Gt,
              sympy.Equality: sympy.Ne, sympy.Unequality: sympy.Eq}


def negation(condition) -> sympy.Basic:
    """not `condition`, a comparison kept unevaluated: export's size symbols are declared
    positive, so sympy would decide `s0 <= 0` false whatever the symbol's range."""
    negate = _NEGATIONS.get(type(condition))
    if negate is None:
        return sympy.Not(condition)
    return negate(*condition.args, evaluate=False)
