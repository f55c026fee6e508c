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
