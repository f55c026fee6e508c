"""Complex ops as real math on (real, imag) pairs: one rule per ATen op, over `Pair`s (a
complex operand whose tensor has its sizes + (2,)), real tensors and Python numbers; the
arithmetic here, views and creation in complex_views.py. frontend/complex.py traces them."""
from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ..errors import CompileError


class Pair:
    """A complex operand as the real tensor of its pairs: `t[..., 0]` real, `t[..., 1]` imag."""

    __slots__ = ("t",)

    def __init__(self, t: torch.Tensor):
        self.t = t

    @property
    def re(self) -> torch.Tensor:
        return self.t[..., 0]

    @property
    def im(self) -> torch.Tensor:
        return self.t[..., 1]

    @property
    def ndim(self) -> int:
        return self.t.dim() - 1

    @property
    def shape(self) -> tuple:
        return tuple(self.t.shape[:-1])


# aten op name ("aten::mul", every overload) -> rule(out, *args, **kwargs); `out` is the
# node's value as export recorded it (a fake tensor, or a list of them)
RULES: dict[str, Callable] = {}


def rule(*names: str) -> Callable:
    """Register fn for the aten ops `names` ("prims::neg" names a prim: torch's reference
    decompositions reach those)."""
    def wrap(fn: Callable) -> Callable:
        for name in names:
            RULES[name if "::" in name else "aten::" + name] = fn
        return fn
    return wrap


def real_dtype(dtype: torch.dtype) -> torch.dtype:
    """float32 for complex64, float64 for complex128; a real dtype itself."""
    return dtype.to_real() if dtype.is_complex else dtype


class _Typed:
    """Stands for a rule's `out` where only its dtype is read: a step computed in another."""

    def __init__(self, dtype: torch.dtype):
        self.dtype = dtype


def parts_dtype(out) -> torch.dtype:
    """The real dtype a rule computes in: that of the node's (first) result's parts."""
    first = out[0] if isinstance(out, (list, tuple)) else out
    return real_dtype(first.dtype)


def pair_dim(d: int, ndim: int) -> int:
    """A dim of a complex tensor of rank `ndim`, made non-negative: the same dim of its pairs."""
    return d + ndim if d < 0 else d


def parts(x, dtype: torch.dtype):
    """(real, imag) of an operand in `dtype`: a real operand's imag is 0.0, as torch promotes
    it to complex before the op."""
    if isinstance(x, Pair):
        t = x.t if x.t.dtype == dtype else x.t.to(dtype)
        return t[..., 0], t[..., 1]
    if isinstance(x, torch.Tensor):
        return (x if x.dtype == dtype else x.to(dtype)), 0.0
    if isinstance(x, complex):
        return x.real, x.imag
    return float(x), 0.0


def make(re, im, dtype: torch.dtype | None = None) -> Pair:
    """The pair tensor of real and imag parts (tensors or numbers, one of them a tensor
    unless `dtype` is given), broadcast together."""
    if not isinstance(re, torch.Tensor) and not isinstance(im, torch.Tensor):
        re = torch.full((), re, dtype=dtype)
    if not isinstance(re, torch.Tensor):
        re = torch.full_like(im, re)
    if not isinstance(im, torch.Tensor):
        im = torch.full_like(re, im)
    re, im = torch.broadcast_tensors(re, im)
    return Pair(torch.stack([re, im], -1))


def as_pair(x, dtype: torch.dtype) -> Pair:
    if isinstance(x, Pair):
        return x if x.t.dtype == dtype else Pair(x.t.to(dtype))
    return make(*parts(x, dtype), dtype)


def pair_tensor(x, dtype: torch.dtype) -> torch.Tensor:
    """An operand as a tensor of pairs (a real one with imag 0, as torch promotes it), built
    over the pairs' own index so that it fuses into the op reading it, never a separate loop
    over half as many elements (fusion would not inline that into its reader)."""
    if isinstance(x, Pair):
        return x.t if x.t.dtype == dtype else x.t.to(dtype)
    re, im = parts(x, dtype)
    if isinstance(re, torch.Tensor):
        return torch.constant_pad_nd(re.unsqueeze(-1), (0, 1), 0.0)
    return torch.constant_pad_nd(torch.full((1,), re, dtype=dtype), (0, 1), im)


def _div(a, b, dtype):
    """Smith's algorithm, as numpy and c10::complex divide: scaled by the larger part of b."""
    ar, ai = parts(a, dtype)
    br, bi = parts(b, dtype)
    br, bi = (v if isinstance(v, torch.Tensor) else torch.full((), v, dtype=dtype)
              for v in (br, bi))
    # a zero divisor gives (ar / 0, ai / 0), as c10::complex divides (inf or nan parts)
    zero = (br == 0) & (bi == 0)
    big_re = br.abs() >= bi.abs()
    rat = torch.where(big_re, bi / br, br / bi)
    scl = 1.0 / torch.where(big_re, br + bi * rat, bi + br * rat)
    re = torch.where(big_re, (ar + ai * rat) * scl, (ar * rat + ai) * scl)
    im = torch.where(big_re, (ai - ar * rat) * scl, (ai * rat - ar) * scl)
    return torch.where(zero, ar / br.abs(), re), torch.where(zero, ai / bi.abs(), im)


def _times_alpha(b, alpha, dtype) -> Pair:
    """alpha * b as eager's add and sub compute it for complex values, alpha = 1 included:
    a complex product, so (inf + 0j) * (1 + 0j) has a nan imaginary part there too."""
    return mul(None, b, alpha, dtype)


# ---- the boundary between real and complex -------------------------------------------------

@rule("view_as_complex")
def view_as_complex(out, x):
    return Pair(x)


@rule("view_as_real")
def view_as_real(out, x):
    return x.t


@rule("real", "prims::real")
def real(out, x):
    return x.re


@rule("imag", "prims::imag")
def imag(out, x):
    return x.im


@rule("complex", "prims::complex")
def complex_(out, re, im):
    return make(re, im)


@rule("polar")
def polar(out, magnitude, angle):
    return make(magnitude * torch.cos(angle), magnitude * torch.sin(angle))


@rule("_to_copy", "to", "_to_dim_order_copy", "prims::convert_element_type")
def to_copy(out, x, *args, **kwargs):
    """Between complex types a cast of both parts; to a real type the real part (torch drops
    the imaginary one, with a warning), to bool whether either part is nonzero."""
    dtype = out.dtype
    if dtype.is_complex:  # a new tensor, never an alias (a later in-place op updates it alone)
        return Pair(pair_tensor(x, real_dtype(dtype)).clone())
    if dtype == torch.bool:
        return (x.re != 0) | (x.im != 0)
    return x.re.to(dtype, copy=True)


@rule("abs", "prims::abs")
def abs_(out, x):
    return torch.hypot(x.re, x.im)


@rule("angle")
def angle(out, x):
    return torch.atan2(x.im, x.re)


# ---- pointwise ----------------------------------------------------------------------------

@rule("add", "prims::add")
def add(out, a, b, alpha=1):
    dtype = parts_dtype(out)
    return Pair(pair_tensor(a, dtype) + _times_alpha(b, alpha, dtype).t)


@rule("sub", "prims::sub")
def sub(out, a, b, alpha=1):
    dtype = parts_dtype(out)
    return Pair(pair_tensor(a, dtype) - _times_alpha(b, alpha, dtype).t)


@rule("rsub")
def rsub(out, a, b, alpha=1):
    dtype = parts_dtype(out)
    return Pair(pair_tensor(b, dtype) - _times_alpha(a, alpha, dtype).t)


@rule("mul", "prims::mul")
def mul(out, a, b, dtype: torch.dtype | None = None):
    """(ar*br - ai*bi, ar*bi + ai*br) as a * br + flip(a) * (-bi, bi) over whole pairs, so
    the product fuses into one loop (a real operand's bi is 0, as torch promotes it)."""
    dtype = dtype or parts_dtype(out)
    if not isinstance(a, (Pair, torch.Tensor)):  # a number: the other one is a tensor
        a, b = b, a
    if not isinstance(a, Pair):
        a, b = b, a
    pairs = pair_tensor(a, dtype)
    if isinstance(b, Pair):
        bt = pair_tensor(b, dtype)
        br, bi = bt[..., :1], bt[..., 1:]
    else:
        br, bi = parts(b, dtype)
        br = br.unsqueeze(-1) if isinstance(br, torch.Tensor) else br
    sign = torch.arange(-1, 2, 2, dtype=dtype)  # (-1, 1)
    return Pair(pairs * br + pairs.flip(-1) * (bi * sign))


@rule("div", "prims::div")
def div(out, a, b, rounding_mode=None):
    if rounding_mode is not None:
        raise CompileError(f"div with rounding_mode={rounding_mode!r} is not defined on complex "
                           "values")
    return make(*_div(a, b, parts_dtype(out)))


@rule("reciprocal", "prims::reciprocal")
def reciprocal(out, x):
    return make(*_div(1.0, x, parts_dtype(out)))


@rule("neg", "_neg_view", "prims::neg")
def neg(out, x):
    return Pair(-x.t)


@rule("conj", "_conj", "conj_physical", "_conj_physical", "prims::conj_physical",
      "prims::conj")
def conj(out, x):
    return Pair(x.t * torch.arange(1, -2, -2, dtype=x.t.dtype))  # (1, -1): exact


@rule("exp", "prims::exp")
def exp(out, x):
    r = torch.exp(x.re)
    return make(r * torch.cos(x.im), r * torch.sin(x.im))


@rule("log", "prims::log")
def log(out, x):
    return make(torch.log(torch.hypot(x.re, x.im)), torch.atan2(x.im, x.re))


@rule("sqrt", "prims::sqrt")
def sqrt(out, x):
    """The principal root, without cancellation: t = sqrt((|re| + |z|) / 2) is the larger
    part, the other is |im| / 2t; the imag part takes im's sign."""
    re, im = x.re, x.im
    t = torch.sqrt((re.abs() + torch.hypot(re, im)) * 0.5)
    other = torch.where(t == 0, torch.zeros_like(t), im.abs() / (2 * t))
    positive = re >= 0
    infinite = torch.isinf(im)  # sqrt(x + inf j) is inf + inf j whatever x is, nan too
    inf = torch.full_like(t, float("inf"))
    return make(torch.where(infinite, inf, torch.where(positive, t, other)),
                torch.copysign(torch.where(infinite, inf, torch.where(positive, other, t)), im))


@rule("rsqrt")
def rsqrt(out, x):
    return reciprocal(out, sqrt(out, x))


@rule("sin", "prims::sin")
def sin(out, x):
    return make(torch.sin(x.re) * torch.cosh(x.im), torch.cos(x.re) * torch.sinh(x.im))


@rule("cos", "prims::cos")
def cos(out, x):
    return make(torch.cos(x.re) * torch.cosh(x.im), -(torch.sin(x.re) * torch.sinh(x.im)))


@rule("sinh", "prims::sinh")
def sinh(out, x):
    return make(torch.sinh(x.re) * torch.cos(x.im), torch.cosh(x.re) * torch.sin(x.im))


@rule("cosh", "prims::cosh")
def cosh(out, x):
    return make(torch.cosh(x.re) * torch.cos(x.im), torch.sinh(x.re) * torch.sin(x.im))


@rule("tanh", "prims::tanh")
def tanh(out, x):
    """Kahan's form, which neither overflows nor cancels: with t = tan(b), s = sinh(a),
    tanh(a + bj) = (s sqrt(1 + s^2) (1 + t^2) + t j) / (1 + s^2 (1 + t^2)); past |a| = 20
    (float) or 40 (double) it is sign(a) + 4 sin(b) cos(b) exp(-2|a|) j."""
    a, b = x.re, x.im
    t, s = torch.tan(b), torch.sinh(a)
    beta = 1 + t * t
    denom = 1 + beta * s * s
    far = a.abs() > (20.0 if a.dtype == torch.float32 else 40.0)
    re = torch.where(far, torch.sign(a), beta * s * torch.sqrt(1 + s * s) / denom)
    im = torch.where(far, 4 * torch.sin(b) * torch.cos(b) * torch.exp(-2 * a.abs()), t / denom)
    return make(re, im)


@rule("log10", "prims::log10")
def log10(out, x):
    return Pair(log(out, x).t / math.log(10))


@rule("log2", "prims::log2")
def log2(out, x):
    return Pair(log(out, x).t / math.log(2))


@rule("pow")
def pow_(out, x, exponent):
    """A real number as exponent by the polar form (x * x for 2, as eager); otherwise
    exp(exponent * log(x)), with eager's values at x = 0: 0 for an exponent of positive real
    part, inf + nan j for a negative one, nan + nan j for 0."""
    if isinstance(x, Pair) and not isinstance(exponent, (Pair, torch.Tensor, complex)):
        if exponent == 1:
            return Pair(x.t.clone())
        if exponent == 2:
            return mul(out, x, x)
        if exponent == 0.5:
            return sqrt(out, x)
        if exponent == -1:
            return reciprocal(out, x)
        r = torch.hypot(x.re, x.im) ** exponent
        theta = torch.atan2(x.im, x.re) * exponent
        return make(r * torch.cos(theta), r * torch.sin(theta))
    dtype = parts_dtype(out)
    wide = _Typed(torch.complex128)  # in double: exp amplifies log's rounding by |exponent|
    base = Pair(pair_tensor(x, torch.float64))
    power = Pair(exp(wide, mul(wide, exponent, log(wide, base))).t.to(dtype))
    base = Pair(base.t.to(dtype))
    er = parts(exponent, dtype)[0]
    inf, nan = float("inf"), float("nan")
    if isinstance(er, torch.Tensor):
        at_zero = make(torch.where(er > 0, 0.0, torch.where(er < 0, inf, nan)).to(dtype),
                       torch.where(er > 0, 0.0, nan).to(dtype))
    else:
        at_zero = make(0.0 if er > 0 else inf if er < 0 else nan, 0.0 if er > 0 else nan, dtype)
    zero = ((base.re == 0) & (base.im == 0)).unsqueeze(-1)
    return Pair(torch.where(zero, at_zero.t, power.t))


@rule("eq", "prims::eq")
def eq(out, a, b):
    dtype = torch.float64 if any(isinstance(v, (Pair, torch.Tensor)) and (
        v.t if isinstance(v, Pair) else v).dtype in (torch.float64, torch.complex128)
        for v in (a, b)) else torch.float32
    ar, ai = parts(a, dtype)
    br, bi = parts(b, dtype)
    return (ar == br) & (ai == bi)


@rule("ne", "prims::ne")
def ne(out, a, b):
    return ~eq(out, a, b)


@rule("isnan")
def isnan(out, x):
    return torch.isnan(x.re) | torch.isnan(x.im)


@rule("isinf")
def isinf(out, x):
    return torch.isinf(x.re) | torch.isinf(x.im)


@rule("isfinite")
def isfinite(out, x):
    return torch.isfinite(x.re) & torch.isfinite(x.im)


@rule("where", "prims::where")
def where(out, condition, a, b):
    dtype = parts_dtype(out)
    return Pair(torch.where(condition.unsqueeze(-1), as_pair(a, dtype).t, as_pair(b, dtype).t))


# ---- reductions and products -------------------------------------------------------------

def _reduced_dims(x: Pair, dim) -> list[int]:
    if x.ndim == 0:  # dim 0 or -1 of a scalar is the scalar itself: nothing to reduce
        return []
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(x.ndim))
    dims = dim if isinstance(dim, (list, tuple)) else [dim]
    return [pair_dim(d, x.ndim) for d in dims]


@rule("sum")
def sum_(out, x, dim=None, keepdim=False, *, dtype=None):
    pairs = as_pair(x, parts_dtype(out)).t
    dims = _reduced_dims(x, dim)
    return Pair(pairs.sum(dims, keepdim=keepdim) if dims else pairs.clone())


@rule("mean")
def mean(out, x, dim=None, keepdim=False, *, dtype=None):
    pairs = as_pair(x, parts_dtype(out)).t
    dims = _reduced_dims(x, dim)
    return Pair(pairs.mean(dims, keepdim=keepdim) if dims else pairs.clone())


@rule("cumsum")
def cumsum(out, x, dim, *, dtype=None):
    """The real and imaginary parts summed apart, along the same dim of the pairs."""
    pairs = as_pair(x, parts_dtype(out)).t
    if x.ndim == 0:
        return Pair(pairs.clone())
    return Pair(pairs.cumsum(pair_dim(dim, x.ndim)))


def _product(fn, a, b, dtype):
    """A complex matrix product. Both operands matrices (or batches): one real product of a's
    pairs as a [m, 2k] matrix (read in place) by b embedded as [[br, bi], [-bi, br]] blocks,
    [2k, 2n], whose [m, 2n] result is the product's pairs; otherwise four real products."""
    if isinstance(a, Pair) and isinstance(b, Pair) and a.ndim >= 2 and b.ndim >= 2:
        at, bt = pair_tensor(a, dtype), pair_tensor(b, dtype)
        br, bi = bt[..., 0], bt[..., 1]
        k, n = bt.shape[-3], bt.shape[-2]
        blocks = torch.stack([torch.stack([br, bi], -1), torch.stack([-bi, br], -1)], -3)
        embedded = blocks.reshape(*bt.shape[:-3], 2 * k, 2 * n)
        flat = fn(at.reshape(*at.shape[:-2], 2 * at.shape[-2]), embedded)
        return Pair(flat.reshape(*flat.shape[:-1], n, 2))
    ar, ai = parts(a, dtype)
    br, bi = parts(b, dtype)
    if not isinstance(ai, torch.Tensor):
        return make(fn(ar, br), fn(ar, bi))
    if not isinstance(bi, torch.Tensor):
        return make(fn(ar, br), fn(ai, br))
    return make(fn(ar, br) - fn(ai, bi), fn(ar, bi) + fn(ai, br))


@rule("mm")
def mm(out, a, b):
    return _product(torch.mm, a, b, parts_dtype(out))


@rule("bmm")
def bmm(out, a, b):
    return _product(torch.bmm, a, b, parts_dtype(out))


@rule("matmul")
def matmul(out, a, b):
    return _product(torch.matmul, a, b, parts_dtype(out))
