"""The expression DAG of loop bodies: what value one element holds.

Plain frozen dataclasses, so bodies print, hash and compare. Indices are sympy
expressions over loop variables (`i<k>`, `r<k>`) and shape symbols.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

import sympy

from ..dtypes import DType


class UnaryOp(enum.Enum):
    NEG = "neg"
    EXP = "exp"
    EXPM1 = "expm1"
    LOG = "log"
    LOG1P = "log1p"
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    ABS = "abs"
    TANH = "tanh"
    ERF = "erf"
    SIGMOID = "sigmoid"
    SIN = "sin"
    COS = "cos"
    TAN = "tan"
    ASIN = "asin"
    ACOS = "acos"
    ATAN = "atan"
    SINH = "sinh"
    COSH = "cosh"
    ASINH = "asinh"
    ACOSH = "acosh"
    ATANH = "atanh"
    EXP2 = "exp2"
    LOG2 = "log2"
    LOG10 = "log10"
    FLOOR = "floor"
    CEIL = "ceil"
    ROUND = "round"
    TRUNC = "trunc"
    RECIPROCAL = "reciprocal"
    SIGN = "sign"
    NOT = "logical_not"
    BITWISE_NOT = "bitwise_not"
    ISNAN = "isnan"
    SIGNBIT = "signbit"  # the sign bit of a float: true for -0.0 and -NaN too
    BITS64 = "bits64"  # the bits of x widened to double or int64, as uint64 (hash_tensor)
    FREXP_MANTISSA = "frexp_mantissa"  # x = m * 2^e with 0.5 <= |m| < 1 (x itself if not finite)
    FREXP_EXPONENT = "frexp_exponent"  # e as int32 (0 for 0, inf and NaN)
    # special functions (kernels/aotc_special.h); the value is the C++ name
    ERFC = "erfc"
    LGAMMA = "lgamma"
    DIGAMMA = "digamma"
    I0 = "i0"
    I1 = "i1"
    I0E = "i0e"
    I1E = "i1e"
    K0 = "k0"
    K1 = "k1"
    K0E = "k0e"
    K1E = "k1e"
    J0 = "j0"
    J1 = "j1"
    Y0 = "y0"
    Y1 = "y1"
    SPHERICAL_J0 = "spherical_j0"
    ERFCX = "erfcx"
    NDTR = "ndtr"
    LOG_NDTR = "log_ndtr"
    NDTRI = "ndtri"
    AIRY_AI = "airy_ai"
    ERFINV = "erfinv"


class BinaryOp(enum.Enum):
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"  # true division (floats)
    FLOORDIV = "floordiv"  # Python semantics (rounds toward -inf)
    TRUNCDIV = "truncdiv"  # C semantics (integers)
    REMAINDER = "remainder"  # Python semantics (sign of divisor)
    FMOD = "fmod"
    POW = "pow"
    MAXIMUM = "maximum"  # NaN-propagating
    MINIMUM = "minimum"
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    AND = "logical_and"
    OR = "logical_or"
    XOR = "logical_xor"
    BITWISE_AND = "bitwise_and"
    BITWISE_OR = "bitwise_or"
    BITWISE_XOR = "bitwise_xor"
    ATAN2 = "atan2"
    LSHIFT = "lshift"  # integers: 0 for a shift outside [0, bits), as PyTorch
    RSHIFT = "rshift"  # arithmetic; a shift outside [0, bits) shifts by bits - 1
    GCD = "gcd"  # integers: the non-negative greatest common divisor, gcd(0, 0) = 0
    NEXTAFTER = "nextafter"  # the next float after a toward b
    HYPOT = "hypot"  # sqrt(a*a + b*b) without overflow in the squares
    ZETA = "zeta"  # Hurwitz zeta(x, q)
    POLYGAMMA = "polygamma"  # polygamma(n, x)
    IGAMMA = "igamma"  # regularized lower incomplete gamma P(a, x)
    IGAMMAC = "igammac"  # regularized upper incomplete gamma Q(a, x) = 1 - P(a, x)
    CHEBYSHEV_T = "chebyshev_t"  # orthogonal polynomials (x, degree n)
    CHEBYSHEV_U = "chebyshev_u"
    CHEBYSHEV_V = "chebyshev_v"
    CHEBYSHEV_W = "chebyshev_w"
    SHIFTED_CHEBYSHEV_T = "shifted_chebyshev_t"  # on [0, 1]: the kind at 2x - 1
    SHIFTED_CHEBYSHEV_U = "shifted_chebyshev_u"
    SHIFTED_CHEBYSHEV_V = "shifted_chebyshev_v"
    SHIFTED_CHEBYSHEV_W = "shifted_chebyshev_w"
    HERMITE_H = "hermite_h"
    HERMITE_HE = "hermite_he"
    LAGUERRE_L = "laguerre_l"
    LEGENDRE_P = "legendre_p"


SPECIAL_UNARY = frozenset(UnaryOp(v) for v in (
    "erfc", "lgamma", "digamma", "i0", "i1", "i0e", "i1e", "k0", "k1", "k0e", "k1e", "j0", "j1",
    "y0", "y1", "spherical_j0", "erfcx", "ndtr", "log_ndtr", "ndtri", "airy_ai", "erfinv"))
SPECIAL_BINARY = frozenset(BinaryOp(v) for v in (
    "zeta", "polygamma", "igamma", "igammac", "chebyshev_t", "chebyshev_u", "chebyshev_v", "chebyshev_w",
    "shifted_chebyshev_t", "shifted_chebyshev_u", "shifted_chebyshev_v", "shifted_chebyshev_w",
    "hermite_h", "hermite_he", "laguerre_l", "legendre_p"))


COMPARISONS = frozenset(
    {BinaryOp.EQ, BinaryOp.NE, BinaryOp.LT, BinaryOp.LE, BinaryOp.GT, BinaryOp.GE,
     BinaryOp.AND, BinaryOp.OR, BinaryOp.XOR}
)


@dataclass(frozen=True)
class Load:
    """Element `index` (one sympy expression per axis) of buffer `buffer`."""

    buffer: str
    index: tuple[sympy.Expr, ...]
    dtype: DType


@dataclass(frozen=True)
class IndirectLoad:
    """Element `index` of `buffer`, where each symbol `ind<j>` in the index stands for the
    value of `indirect[j]` (an int64 expression). With `wrap`, a negative value counts from
    the end of its dim (x[idx]); any value left outside [0, bounds[j]) is an error the run
    reports (gather, index_select and embedding take no negative indices)."""

    buffer: str
    index: tuple[sympy.Expr, ...]
    indirect: tuple[Node, ...]
    bounds: tuple[sympy.Expr, ...]
    dtype: DType
    wrap: bool = False


@dataclass(frozen=True)
class Constant:
    value: float | int | bool
    dtype: DType


@dataclass(frozen=True)
class IndexValue:
    """An index expression used as a value (arange, masks built from positions)."""

    expr: sympy.Expr
    dtype: DType


@dataclass(frozen=True)
class Unary:
    op: UnaryOp
    x: Node
    dtype: DType


@dataclass(frozen=True)
class Binary:
    op: BinaryOp
    a: Node
    b: Node
    dtype: DType

    def __post_init__(self) -> None:
        if self.op not in COMPARISONS and self.a.dtype != self.b.dtype:
            raise TypeError(f"{self.op.value}: operands {self.a.dtype} and {self.b.dtype} differ")


@dataclass(frozen=True)
class Where:
    cond: Node
    a: Node
    b: Node
    dtype: DType

    def __post_init__(self) -> None:
        if self.cond.dtype is not DType.bool:
            raise TypeError("where: condition must be bool")


@dataclass(frozen=True)
class Cast:
    x: Node
    dtype: DType


Node = Load | IndirectLoad | Constant | IndexValue | Unary | Binary | Where | Cast


def indirect_var(j: int) -> sympy.Symbol:
    """The symbol that stands for an IndirectLoad's j-th data-dependent index value."""
    return sympy.Symbol(f"ind{j}", integer=True)


def children(e: Node) -> tuple[Node, ...]:
    if isinstance(e, IndirectLoad):
        return e.indirect
    if isinstance(e, Unary):
        return (e.x,)
    if isinstance(e, Cast):
        return (e.x,)
    if isinstance(e, Binary):
        return (e.a, e.b)
    if isinstance(e, Where):
        return (e.cond, e.a, e.b)
    return ()


def rebuild(e: Node, kids: tuple[Node, ...]) -> Node:
    if isinstance(e, IndirectLoad):
        return IndirectLoad(e.buffer, e.index, tuple(kids), e.bounds, e.dtype, e.wrap)
    if isinstance(e, Unary):
        return Unary(e.op, kids[0], e.dtype)
    if isinstance(e, Cast):
        return Cast(kids[0], e.dtype)
    if isinstance(e, Binary):
        return Binary(e.op, kids[0], kids[1], e.dtype)
    if isinstance(e, Where):
        return Where(kids[0], kids[1], kids[2], e.dtype)
    return e


def transform(e: Node, leaf_fn, memo: dict | None = None) -> Node:
    """Rebuild `e` bottom-up, passing each leaf (Load/Constant/IndexValue) and each rebuilt
    IndirectLoad (which carries an index too) through leaf_fn."""
    memo = {} if memo is None else memo
    if e in memo:
        return memo[e]
    kids = children(e)
    if isinstance(e, IndirectLoad):
        out = leaf_fn(rebuild(e, tuple(transform(k, leaf_fn, memo) for k in kids)))
    elif kids:
        out = rebuild(e, tuple(transform(k, leaf_fn, memo) for k in kids))
    else:
        out = leaf_fn(e)
    memo[e] = out
    return out


def substitute_index(e: Node, mapping: dict) -> Node:
    """Simultaneously replace index symbols inside every Load and IndexValue of `e`."""
    if not mapping:
        return e

    def leaf(x: Node) -> Node:
        if isinstance(x, (Load, IndirectLoad)):
            return with_index(x, tuple(sympy.sympify(i).xreplace(mapping) for i in x.index))
        if isinstance(x, IndexValue):
            return IndexValue(x.expr.xreplace(mapping), x.dtype)
        return x

    return transform(e, leaf)


def with_index(x: Load | IndirectLoad, index: tuple) -> Load | IndirectLoad:
    if isinstance(x, Load):
        return Load(x.buffer, index, x.dtype)
    return IndirectLoad(x.buffer, index, x.indirect, x.bounds, x.dtype, x.wrap)


def nodes(e: Node) -> list[Node]:
    """Every distinct node of `e`, in first-visit (depth-first, pre-order) order."""
    seen: dict[Node, None] = {}

    def visit(x: Node) -> None:
        if x in seen:
            return
        seen[x] = None
        for k in children(x):
            visit(k)

    visit(e)
    return list(seen)


def loads(e: Node) -> list[Load | IndirectLoad]:
    """Every distinct (direct or indirect) load in `e`, in first-visit order."""
    return [x for x in nodes(e) if isinstance(x, (Load, IndirectLoad))]


def cast(e: Node, dtype: DType) -> Node:
    if e.dtype == dtype:
        return e
    if isinstance(e, Constant):
        return constant(e.value, dtype)
    return Cast(e, dtype)


def constant(value, dtype: DType) -> Node:
    """`value` as `dtype`: a Constant for a number; for a symbolic scalar (a sympy expression
    over the bound symbols, ir/scalars.py) its run-time value, cast as eager casts it."""
    if isinstance(value, sympy.Basic):
        from .scalars import is_symbolic, scalar_value

        if is_symbolic(value):
            return cast(scalar_value(value), dtype)
        value = bool(value) if isinstance(value, sympy.logic.boolalg.BooleanAtom) else (
            int(value) if value.is_Integer else float(value))
    if dtype is DType.bool:
        return Constant(bool(value), dtype)
    if dtype.is_floating:
        return Constant(float(value), dtype)
    return Constant(int(value), dtype)


def simplify_loads(e: Node, ranges: dict) -> Node:
    """Simplify every index in `e` knowing each loop variable v ranges over [0, ranges[v])."""
    from .symbols import simplify_index

    def leaf(x: Node) -> Node:
        if isinstance(x, (Load, IndirectLoad)):
            return with_index(x, tuple(simplify_index(i, ranges) for i in x.index))
        if isinstance(x, IndexValue):
            return IndexValue(simplify_index(x.expr, ranges), x.dtype)
        return x

    return transform(e, leaf)
