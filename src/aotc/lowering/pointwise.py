"""Pointwise lowerings: arithmetic, math functions, activations, comparisons, casts."""
from __future__ import annotations

import math

import torch

from ..dtypes import DType
from ..errors import CompileError
from ..ir.expr import Binary, BinaryOp, Node, Unary, UnaryOp, Where, cast, constant
from ..ir.symbols import index_var
from .common import operand, promote
from .context import LoweringContext, TensorValue
from .conv import fuse_clamp, fuse_hardswish, fuse_residual
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "pointwise"


def _float_dtype(ctx: LoweringContext, *args) -> DType:
    d = promote(*args)
    return d if d.is_floating else (ctx.out_dtype or DType.float32)


def _unary(ctx: LoweringContext, x: TensorValue, op: UnaryOp) -> TensorValue:
    d = ctx.out_dtype
    return ctx.pointwise(Unary(op, operand(x, d, ctx.out_sizes), d))


_UNARY = {
    aten.neg.default: UnaryOp.NEG, aten.exp.default: UnaryOp.EXP, aten.expm1.default: UnaryOp.EXPM1,
    aten.log.default: UnaryOp.LOG, aten.log1p.default: UnaryOp.LOG1P,
    aten.sqrt.default: UnaryOp.SQRT, aten.rsqrt.default: UnaryOp.RSQRT,
    aten.abs.default: UnaryOp.ABS, aten.tanh.default: UnaryOp.TANH, aten.erf.default: UnaryOp.ERF,
    aten.sigmoid.default: UnaryOp.SIGMOID, aten.sin.default: UnaryOp.SIN,
    aten.cos.default: UnaryOp.COS, aten.floor.default: UnaryOp.FLOOR,
    aten.ceil.default: UnaryOp.CEIL, aten.round.default: UnaryOp.ROUND,
    aten.trunc.default: UnaryOp.TRUNC, aten.reciprocal.default: UnaryOp.RECIPROCAL,
    aten.sign.default: UnaryOp.SIGN, aten.logical_not.default: UnaryOp.NOT,
    aten.bitwise_not.default: UnaryOp.BITWISE_NOT, aten.isnan.default: UnaryOp.ISNAN,
    aten.tan.default: UnaryOp.TAN, aten.asin.default: UnaryOp.ASIN,
    aten.acos.default: UnaryOp.ACOS, aten.atan.default: UnaryOp.ATAN,
    aten.sinh.default: UnaryOp.SINH, aten.cosh.default: UnaryOp.COSH,
    aten.asinh.default: UnaryOp.ASINH, aten.acosh.default: UnaryOp.ACOSH,
    aten.atanh.default: UnaryOp.ATANH, aten.exp2.default: UnaryOp.EXP2,
    aten.log2.default: UnaryOp.LOG2, aten.log10.default: UnaryOp.LOG10,
}


_ROUNDING = (UnaryOp.FLOOR, UnaryOp.CEIL, UnaryOp.ROUND, UnaryOp.TRUNC)


def _register_unary(op, uop: UnaryOp) -> None:
    @register_lowering(op, family=FAMILY)
    def lower(ctx, x):
        if uop in (UnaryOp.NOT, UnaryOp.ISNAN):  # bool result, operand keeps its dtype
            return ctx.pointwise(Unary(uop, operand(x, x.dtype, ctx.out_sizes), DType.bool))
        if uop in _ROUNDING and not x.dtype.is_floating:  # integers are already whole
            return ctx.pointwise(operand(x, x.dtype, ctx.out_sizes))
        return _unary(ctx, x, uop)


for _op, _uop in _UNARY.items():
    _register_unary(_op, _uop)


def _signbit(x: Node, d: DType) -> Node:
    """Whether the sign bit of `x` (of dtype `d`) is set: -0.0 and -NaN count, as in torch."""
    if d.is_floating:
        return Unary(UnaryOp.SIGNBIT, x, DType.bool)
    return Binary(BinaryOp.LT, x, constant(0, d), DType.bool)


@register_lowering(aten.signbit.default, family=FAMILY)
def lower_signbit(ctx, x):
    d = x.dtype.compute if x.dtype.is_floating else x.dtype
    return ctx.pointwise(_signbit(operand(x, d, ctx.out_sizes), d))


@register_lowering(aten.copysign.Tensor, aten.copysign.Scalar, family=FAMILY)
def lower_copysign(ctx, a, b):
    """|a| with the sign bit of b, in the (floating) result dtype."""
    d = ctx.out_dtype.compute
    s = ctx.out_sizes
    mag = Unary(UnaryOp.ABS, operand(a, d, s), d)
    sign_of = operand(b, promote(b).compute, s)
    neg = _signbit(sign_of, sign_of.dtype)
    return ctx.pointwise(cast(Where(neg, Unary(UnaryOp.NEG, mag, d), mag, d), ctx.out_dtype))


def _binary(ctx: LoweringContext, a, b, op: BinaryOp, compute: DType | None = None) -> TensorValue:
    d = compute or promote(a, b)
    s = ctx.out_sizes
    body: Node = Binary(op, operand(a, d, s), operand(b, d, s), d)
    return ctx.pointwise(cast(body, ctx.out_dtype))


@register_lowering(aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar,
                   aten.rsub.Tensor, aten.rsub.Scalar, family=FAMILY)
def lower_add_sub(ctx, a, b, alpha=1):
    op = BinaryOp.SUB if ("sub" in ctx.target) else BinaryOp.ADD
    if "rsub" in ctx.target:
        a, b = b, a
    if op is BinaryOp.ADD and alpha == 1 and "rsub" not in ctx.target:
        fused = fuse_residual(ctx, a, b)
        if fused is not None:
            return fused
    d = promote(a, b)
    s = ctx.out_sizes
    rhs = operand(b, d, s)
    if alpha != 1:
        rhs = Binary(BinaryOp.MUL, rhs, constant(alpha, d), d)
    return ctx.pointwise(cast(Binary(op, operand(a, d, s), rhs, d), ctx.out_dtype))


@register_lowering(aten.mul.Tensor, aten.mul.Scalar, family=FAMILY)
def lower_mul(ctx, a, b):
    return _binary(ctx, a, b, BinaryOp.MUL)


@register_lowering(aten.div.Tensor, aten.div.Scalar, aten.div.Tensor_mode, aten.div.Scalar_mode,
                   family=FAMILY)
def lower_div(ctx, a, b, rounding_mode=None):
    if rounding_mode is None:
        return _binary(ctx, a, b, BinaryOp.DIV, _float_dtype(ctx, a, b))
    # floats too: FLOORDIV floors the exact quotient, where floor(a / b) would round first
    op = BinaryOp.FLOORDIV if rounding_mode == "floor" else BinaryOp.TRUNCDIV
    return _binary(ctx, a, b, op, promote(a, b))


@register_lowering(aten.floor_divide.default, aten.floor_divide.Scalar, family=FAMILY)
def lower_floor_divide(ctx, a, b):
    return lower_div(ctx, a, b, rounding_mode="floor")


@register_lowering(aten.remainder.Tensor, aten.remainder.Scalar, family=FAMILY)
def lower_remainder(ctx, a, b):
    return _binary(ctx, a, b, BinaryOp.REMAINDER)


@register_lowering(aten.fmod.Tensor, aten.fmod.Scalar, family=FAMILY)
def lower_fmod(ctx, a, b):
    return _binary(ctx, a, b, BinaryOp.FMOD)


@register_lowering(aten.atan2.default, family=FAMILY)
def lower_atan2(ctx, a, b):
    return _binary(ctx, a, b, BinaryOp.ATAN2, _float_dtype(ctx, a, b))


_MINMAX = {aten.maximum.default: BinaryOp.MAXIMUM, aten.minimum.default: BinaryOp.MINIMUM}
_COMPARE = {
    "eq": BinaryOp.EQ, "ne": BinaryOp.NE, "lt": BinaryOp.LT, "le": BinaryOp.LE,
    "gt": BinaryOp.GT, "ge": BinaryOp.GE, "logical_and": BinaryOp.AND,
    "logical_or": BinaryOp.OR, "logical_xor": BinaryOp.XOR,
    "bitwise_and": BinaryOp.BITWISE_AND, "bitwise_or": BinaryOp.BITWISE_OR,
    "bitwise_xor": BinaryOp.BITWISE_XOR,
}


@register_lowering(*_MINMAX, family=FAMILY)
def lower_minmax(ctx, a, b):
    op = BinaryOp.MAXIMUM if "maximum" in ctx.target else BinaryOp.MINIMUM
    return _binary(ctx, a, b, op)


@register_lowering(aten.fmax.default, aten.fmin.default, family=FAMILY)
def lower_fmax_fmin(ctx, a, b):
    """maximum/minimum that ignores a NaN operand (NaN only where both are NaN)."""
    op = BinaryOp.MAXIMUM if "fmax" in ctx.target else BinaryOp.MINIMUM
    d = promote(a, b)
    s = ctx.out_sizes
    x, y = operand(a, d, s), operand(b, d, s)
    body: Node = Binary(op, x, y, d)
    if d.is_floating:
        nan = (Unary(UnaryOp.ISNAN, v, DType.bool) for v in (x, y))
        body = Where(next(nan), y, Where(next(nan), x, body, d), d)
    return ctx.pointwise(cast(body, ctx.out_dtype))


@register_lowering(aten.nextafter.default, torch.ops.prims.nextafter.default, family=FAMILY,
                   in_storage_type=True)
def lower_nextafter(ctx, a, b):
    """The neighbour of a toward b in a's own type (one bfloat16 step, not a float one)."""
    return _binary(ctx, a, b, BinaryOp.NEXTAFTER)


@register_lowering(aten.hypot.default, torch.ops.prims.hypot.default, family=FAMILY)
def lower_hypot(ctx, a, b):
    return _binary(ctx, a, b, BinaryOp.HYPOT, _float_dtype(ctx, a, b))


@register_lowering(aten.gcd.default, torch.ops.prims.gcd.default, family=FAMILY)
def lower_gcd(ctx, a, b):
    return _binary(ctx, a, b, BinaryOp.GCD)


@register_lowering(aten.lcm.default, family=FAMILY)
def lower_lcm(ctx, a, b):
    """|a / gcd * b|, 0 where gcd is 0 (both 0), as PyTorch computes it."""
    d = promote(a, b)
    x, y = operand(a, d, ctx.out_sizes), operand(b, d, ctx.out_sizes)
    g = Binary(BinaryOp.GCD, x, y, d)
    zero = Binary(BinaryOp.EQ, g, constant(0, d), DType.bool)
    safe = Where(zero, constant(1, d), g, d)  # no division by zero in the branch not taken
    m = Unary(UnaryOp.ABS, Binary(BinaryOp.MUL, Binary(BinaryOp.TRUNCDIV, x, safe, d), y, d), d)
    return ctx.pointwise(cast(Where(zero, constant(0, d), m, d), ctx.out_dtype))


def _register_compare(name: str, bop: BinaryOp) -> None:
    packet = getattr(aten, name)
    ops = [getattr(packet, o) for o in ("Tensor", "Scalar", "default") if o in packet.overloads()]

    @register_lowering(*ops, family=FAMILY)
    def lower(ctx, a, b):
        d = promote(a, b)
        if bop in (BinaryOp.AND, BinaryOp.OR, BinaryOp.XOR):
            d = DType.bool
            a_, b_ = (_truth(operand(x, promote(x), ctx.out_sizes)) for x in (a, b))
            return ctx.pointwise(cast(Binary(bop, a_, b_, DType.bool), ctx.out_dtype))
        out = DType.bool if bop in (BinaryOp.EQ, BinaryOp.NE, BinaryOp.LT, BinaryOp.LE,
                                    BinaryOp.GT, BinaryOp.GE) else d
        s = ctx.out_sizes
        return ctx.pointwise(cast(Binary(bop, operand(a, d, s), operand(b, d, s), out), ctx.out_dtype))


def _truth(x: Node) -> Node:
    if x.dtype is DType.bool:
        return x
    return Binary(BinaryOp.NE, x, constant(0, x.dtype), DType.bool)


for _name, _bop in _COMPARE.items():
    _register_compare(_name, _bop)


@register_lowering(aten.pow.Tensor_Tensor, aten.pow.Tensor_Scalar, aten.pow.Scalar, family=FAMILY)
def lower_pow(ctx, a, b):
    d = ctx.out_dtype
    s = ctx.out_sizes
    if not isinstance(b, TensorValue) and isinstance(a, TensorValue):
        x = operand(a, d, s)
        if b == 2:
            return ctx.pointwise(Binary(BinaryOp.MUL, x, x, d))
        if b == 1:
            return ctx.pointwise(x)
        if b == 0.5 and d.is_floating:
            return ctx.pointwise(Unary(UnaryOp.SQRT, x, d))
        if b == -1 and d.is_floating:
            return ctx.pointwise(Unary(UnaryOp.RECIPROCAL, x, d))
    return ctx.pointwise(Binary(BinaryOp.POW, operand(a, d, s), operand(b, d, s), d))


@register_lowering(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther,
                   aten.where.Scalar, family=FAMILY)
def lower_where(ctx, cond, a, b):
    d = ctx.out_dtype
    s = ctx.out_sizes
    return ctx.pointwise(Where(_truth(operand(cond, cond.dtype, s)), operand(a, d, s),
                               operand(b, d, s), d))


@register_lowering(aten.clamp.default, aten.clamp.Tensor, aten.clamp_min.default,
                   aten.clamp_max.default, aten.hardtanh.default, aten.relu6.default,
                   family=FAMILY)
def lower_clamp(ctx, x, lo=None, hi=None):
    if "clamp_max" in ctx.target:
        lo, hi = None, lo
    if "relu6" in ctx.target:
        lo, hi = 0, 6
    if "hardtanh" in ctx.target:
        lo = -1.0 if lo is None else lo
        hi = 1.0 if hi is None else hi
    fused = fuse_clamp(ctx, x, lo, hi)
    if fused is not None:
        return fused
    d = ctx.out_dtype
    s = ctx.out_sizes
    body = operand(x, d, s)
    if lo is not None:
        body = Binary(BinaryOp.MAXIMUM, body, operand(lo, d, s), d)
    if hi is not None:
        body = Binary(BinaryOp.MINIMUM, body, operand(hi, d, s), d)
    return ctx.pointwise(body)


# ---- activations ---------------------------------------------------------------------------

def _activation(ctx, x: TensorValue, fn) -> TensorValue:
    d = ctx.out_dtype
    return ctx.pointwise(fn(operand(x, d, ctx.out_sizes), d))


def _c(v, d: DType) -> Node:
    return constant(v, d)


def _mul(a, b, d):
    return Binary(BinaryOp.MUL, a, b, d)


def _add(a, b, d):
    return Binary(BinaryOp.ADD, a, b, d)


@register_lowering(aten.relu.default, family=FAMILY)
def lower_relu(ctx, x):
    fused = fuse_clamp(ctx, x, 0, None)
    if fused is not None:
        return fused
    return _activation(ctx, x, lambda v, d: Binary(BinaryOp.MAXIMUM, v, _c(0, d), d))


@register_lowering(aten.silu.default, family=FAMILY)
def lower_silu(ctx, x):
    return _activation(ctx, x, lambda v, d: _mul(v, Unary(UnaryOp.SIGMOID, v, d), d))


@register_lowering(aten.gelu.default, family=FAMILY)
def lower_gelu(ctx, x, approximate="none"):
    def exact(v, d):  # 0.5 * x * (1 + erf(x / sqrt(2)))
        e = Unary(UnaryOp.ERF, _mul(v, _c(1 / math.sqrt(2), d), d), d)
        return _mul(_mul(v, _c(0.5, d), d), _add(e, _c(1, d), d), d)

    def tanh(v, d):  # 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
        cube = _mul(_mul(v, v, d), v, d)
        inner = _mul(_c(math.sqrt(2 / math.pi), d), _add(v, _mul(_c(0.044715, d), cube, d), d), d)
        return _mul(_mul(v, _c(0.5, d), d), _add(Unary(UnaryOp.TANH, inner, d), _c(1, d), d), d)

    if approximate not in ("none", "tanh"):
        raise CompileError(f"gelu: unknown approximate={approximate!r}")
    return _activation(ctx, x, tanh if approximate == "tanh" else exact)


@register_lowering(aten.leaky_relu.default, family=FAMILY)
def lower_leaky_relu(ctx, x, negative_slope=0.01):
    return _activation(ctx, x, lambda v, d: Where(
        Binary(BinaryOp.GT, v, _c(0, d), DType.bool), v, _mul(v, _c(negative_slope, d), d), d))


@register_lowering(aten.hardsigmoid.default, family=FAMILY)
def lower_hardsigmoid(ctx, x):
    def f(v, d):
        t = Binary(BinaryOp.MINIMUM, Binary(BinaryOp.MAXIMUM, _add(v, _c(3, d), d), _c(0, d), d),
                   _c(6, d), d)
        return Binary(BinaryOp.DIV, t, _c(6, d), d)
    return _activation(ctx, x, f)


@register_lowering(aten.hardswish.default, family=FAMILY)
def lower_hardswish(ctx, x):
    fused = fuse_hardswish(ctx, x)
    if fused is not None:
        return fused

    def f(v, d):
        t = Binary(BinaryOp.MINIMUM, Binary(BinaryOp.MAXIMUM, _add(v, _c(3, d), d), _c(0, d), d),
                   _c(6, d), d)
        return Binary(BinaryOp.DIV, _mul(v, t, d), _c(6, d), d)
    return _activation(ctx, x, f)


# ---- copies and conversions ----------------------------------------------------------------

@register_lowering(aten.clone.default, aten._to_copy.default, aten.to.dtype,
                   aten.to.dtype_layout, aten.lift_fresh_copy.default,
                   aten.contiguous.default, torch.ops.prims.convert_element_type.default,
                   family=FAMILY)
def lower_copy(ctx, x, *args, **kwargs):
    device = kwargs.get("device")
    if device is not None and str(device) != "cpu":
        raise CompileError(f"{ctx.target}: only cpu tensors are supported, got device {device}")
    return ctx.pointwise(operand(x, ctx.out_dtype, ctx.out_sizes))


@register_lowering(aten.fill.Scalar, family=FAMILY)
def lower_fill(ctx, x, value):
    return ctx.pointwise(operand(value, ctx.out_dtype, ctx.out_sizes))


@register_lowering(aten.copy.default, family=FAMILY)
def lower_copy_into(ctx, dst, src, non_blocking=False):
    """The functional form of dst.copy_(src): src broadcast to dst's shape and dtype."""
    return ctx.pointwise(operand(src, ctx.out_dtype, ctx.out_sizes))


@register_lowering(aten.prelu.default, aten._prelu_kernel.default, family=FAMILY)
def lower_prelu(ctx, x, weight):
    """x where positive, else weight * x; a weight per channel (dim 1) or one for all."""
    d, out = ctx.out_dtype, ctx.out_sizes
    v = operand(x, d, out)
    if weight.ndim == 1 and weight.sizes[0] != 1 and x.ndim > 1:
        w = cast(weight.load((index_var(1),)), d)
    else:
        w = cast(weight.load((0,) * weight.ndim), d)
    return ctx.pointwise(Where(Binary(BinaryOp.GT, v, _c(0, d), DType.bool), v, _mul(w, v, d), d))


def _log_sigmoid(v, d):  # min(x, 0) - log1p(exp(-|x|)): no overflow for large |x|
    neg_abs = Unary(UnaryOp.NEG, Unary(UnaryOp.ABS, v, d), d)
    return Binary(BinaryOp.SUB, Binary(BinaryOp.MINIMUM, v, _c(0, d), d),
                  Unary(UnaryOp.LOG1P, Unary(UnaryOp.EXP, neg_abs, d), d), d)


@register_lowering(aten.log_sigmoid.default, family=FAMILY)
def lower_log_sigmoid(ctx, x):
    return _activation(ctx, x, _log_sigmoid)


@register_lowering(aten.log_sigmoid_forward.default, family=FAMILY)
def lower_log_sigmoid_forward(ctx, x):
    """(log_sigmoid(x), the buffer only backward reads: empty on CPU in inference)."""
    sizes, dtype = ctx.outputs[1]
    return _activation(ctx, x, _log_sigmoid), ctx.pointwise(constant(0, dtype), sizes,
                                                            hint=f"{ctx.node_name}_buffer")


@register_lowering(aten.round.decimals, family=FAMILY)
def lower_round_decimals(ctx, x, decimals=0):
    """round(x * 10^k) / 10^k, or round(x / 10^-k) * 10^-k for negative k, in the compute
    type with 10^|k| rounded to it once (infinite past its range), as torch's kernel."""
    if not x.dtype.is_floating:
        return ctx.pointwise(operand(x, x.dtype, ctx.out_sizes))
    d = ctx.out_dtype
    v = operand(x, d, ctx.out_sizes)
    k = abs(int(decimals))
    scale = constant(10.0 ** k if k <= 308 else math.inf, d)
    if decimals >= 0:
        scaled, back = Binary(BinaryOp.MUL, v, scale, d), BinaryOp.DIV
    else:
        scaled, back = Binary(BinaryOp.DIV, v, scale, d), BinaryOp.MUL
    return ctx.pointwise(Binary(back, Unary(UnaryOp.ROUND, scaled, d), scale, d))


@register_lowering(aten.frexp.Tensor, family=FAMILY)
def lower_frexp(ctx, x):
    """The mantissa in [0.5, 1) (x's type) and the int32 exponent, as std::frexp."""
    if not x.dtype.is_floating:
        raise CompileError(f"frexp needs a floating-point input, not {x.dtype.name}")
    d, s = x.dtype.compute, ctx.out_sizes
    v = operand(x, d, s)
    mantissa = ctx.pointwise(cast(Unary(UnaryOp.FREXP_MANTISSA, v, d), ctx.outputs[0][1]))
    return mantissa, ctx.pointwise(Unary(UnaryOp.FREXP_EXPONENT, v, DType.int32))


@register_lowering(aten.angle.default, family=FAMILY)
def lower_angle(ctx, x):
    """The argument of a real number: pi for negatives, 0 otherwise, NaN kept."""
    d = ctx.out_dtype
    v = operand(x, d, ctx.out_sizes)
    zero = constant(0, d)
    body: Node = Where(Binary(BinaryOp.LT, v, zero, DType.bool), constant(math.pi, d), zero, d)
    if x.dtype.is_floating:
        body = Where(Unary(UnaryOp.ISNAN, v, DType.bool), v, body, d)
    return ctx.pointwise(body)
