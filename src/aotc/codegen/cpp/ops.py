"""How each IR op is spelled in C++: the one place that maps ops to code (scalar today;
vector spellings will sit beside each scalar one)."""
from __future__ import annotations

import math
import struct

from ...dtypes import DType
from ...ir.expr import SPECIAL_BINARY, SPECIAL_UNARY, Binary, BinaryOp, Constant, UnaryOp

_ROUND_TO = {DType.float16: "aotc::round_to_f16", DType.bfloat16: "aotc::round_to_bf16"}


def rounded(text: str, dtype: DType) -> str:
    """A float value cast to a half type: rounded to its precision (computed in float)."""
    return f"{_ROUND_TO[dtype]}({text})" if dtype in _ROUND_TO else text


def literal(value, dtype: DType) -> str:
    if dtype in _ROUND_TO:  # a half constant: its float value, rounded at compile time
        return literal(_round_half(float(value), dtype), DType.float32)
    if dtype is DType.bool:
        return "true" if value else "false"
    if dtype.is_floating:
        v = float(value)
        if math.isnan(v):
            text = "NAN"
        elif math.isinf(v):
            text = "INFINITY" if v > 0 else "-INFINITY"
        else:
            text = repr(v)
            if "e" not in text and "." not in text:
                text += ".0"
        if dtype is DType.float32 and text not in ("NAN", "INFINITY", "-INFINITY"):
            return text + "f"
        return f"{dtype.ctype}({text})" if "INF" in text or text == "NAN" else text
    v = int(value)
    if dtype is DType.int64:
        return f"int64_t({v}LL)" if v < 0 else f"{v}LL"
    return f"{dtype.ctype}({v})"


def unary(op: UnaryOp, x: str, dtype: DType) -> str:
    t = dtype.ctype
    if op in SPECIAL_UNARY:
        return f"aotc::special::{op.value}({x})"
    return {
        UnaryOp.NEG: f"-{x}",
        UnaryOp.EXP: f"aotc::exp({x})",
        UnaryOp.EXPM1: f"std::expm1({x})",
        UnaryOp.LOG: f"std::log({x})",
        UnaryOp.LOG1P: f"std::log1p({x})",
        UnaryOp.SQRT: f"std::sqrt({x})",
        UnaryOp.RSQRT: f"({t}(1) / std::sqrt({x}))",
        UnaryOp.ABS: f"std::abs({x})",
        UnaryOp.TANH: f"aotc::tanh({x})",
        UnaryOp.ERF: f"aotc::erf({x})",
        UnaryOp.SIGMOID: f"aotc::sigmoid({x})",
        UnaryOp.SIN: f"std::sin({x})",
        UnaryOp.COS: f"std::cos({x})",
        UnaryOp.TAN: f"std::tan({x})",
        UnaryOp.ASIN: f"std::asin({x})",
        UnaryOp.ACOS: f"std::acos({x})",
        UnaryOp.ATAN: f"std::atan({x})",
        UnaryOp.SINH: f"std::sinh({x})",
        UnaryOp.COSH: f"std::cosh({x})",
        UnaryOp.ASINH: f"std::asinh({x})",
        UnaryOp.ACOSH: f"std::acosh({x})",
        UnaryOp.ATANH: f"std::atanh({x})",
        UnaryOp.EXP2: f"std::exp2({x})",
        UnaryOp.LOG2: f"std::log2({x})",
        UnaryOp.LOG10: f"std::log10({x})",
        UnaryOp.FLOOR: f"std::floor({x})",
        UnaryOp.CEIL: f"std::ceil({x})",
        UnaryOp.ROUND: f"aotc::round_half_even({x})",
        UnaryOp.TRUNC: f"std::trunc({x})",
        UnaryOp.RECIPROCAL: f"({t}(1) / {x})",
        UnaryOp.SIGN: f"aotc::sign({x})",
        UnaryOp.NOT: f"!{x}",
        UnaryOp.BITWISE_NOT: f"!{x}" if dtype is DType.bool else f"{t}(~{x})",
        UnaryOp.ISNAN: f"std::isnan({x})",
        UnaryOp.SIGNBIT: f"aotc::signbit({x})",
        UnaryOp.BITS64: f"aotc::bits64({x})",
        UnaryOp.FREXP_MANTISSA: f"aotc::frexp_mantissa({x})",
        UnaryOp.FREXP_EXPONENT: f"aotc::frexp_exponent({x})",
    }[op]


_INFIX = {
    BinaryOp.ADD: "+", BinaryOp.SUB: "-", BinaryOp.MUL: "*", BinaryOp.DIV: "/",
    BinaryOp.EQ: "==", BinaryOp.NE: "!=", BinaryOp.LT: "<", BinaryOp.LE: "<=",
    BinaryOp.GT: ">", BinaryOp.GE: ">=", BinaryOp.AND: "&&", BinaryOp.OR: "||",
    BinaryOp.XOR: "!=", BinaryOp.BITWISE_AND: "&", BinaryOp.BITWISE_OR: "|",
    BinaryOp.BITWISE_XOR: "^",
}

# ops whose half-precision result depends on the half type itself, not on a float result
# rounded to it: emitted in the storage type
IN_STORAGE_TYPE = frozenset({BinaryOp.NEXTAFTER})

_CALL = {
    BinaryOp.MAXIMUM: "aotc::maximum", BinaryOp.MINIMUM: "aotc::minimum",
    BinaryOp.FLOORDIV: "aotc::floordiv", BinaryOp.TRUNCDIV: "aotc::truncdiv",
    BinaryOp.REMAINDER: "aotc::remainder", BinaryOp.FMOD: "aotc::fmod",
    BinaryOp.POW: "aotc::ipow", BinaryOp.ATAN2: "std::atan2",
    BinaryOp.LSHIFT: "aotc::lshift", BinaryOp.RSHIFT: "aotc::rshift", BinaryOp.GCD: "aotc::gcd",
    BinaryOp.NEXTAFTER: "aotc::nextafter", BinaryOp.HYPOT: "aotc::hypot",
}


def binary(op: BinaryOp, a: str, b: str, dtype: DType) -> str:
    if op in SPECIAL_BINARY:
        return f"aotc::special::{op.value}({a}, {b})"
    if op in _INFIX:
        text = f"{a} {_INFIX[op]} {b}"
        # integer promotion in C++ widens small types: narrow back to the IR's dtype
        if dtype.ctype in ("int8_t", "int16_t", "uint8_t") and op in (
                BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL, BinaryOp.DIV, BinaryOp.BITWISE_AND,
                BinaryOp.BITWISE_OR, BinaryOp.BITWISE_XOR):
            return f"{dtype.ctype}({text})"
        if op in (BinaryOp.BITWISE_AND, BinaryOp.BITWISE_OR, BinaryOp.BITWISE_XOR) \
                and dtype is DType.bool:
            return f"bool({text})"
        return text
    if op is BinaryOp.ATAN2:
        return f"std::atan2({a}, {b})"
    return f"{_CALL[op]}<{dtype.ctype}>({a}, {b})"


def bounded_by_constant(e: Binary) -> bool:
    """Whether e is a float maximum or minimum of a value and a constant, not NaN, on the
    right (relu, clamp, a requantization's range)."""
    return (e.op in (BinaryOp.MAXIMUM, BinaryOp.MINIMUM) and e.dtype.is_floating
            and isinstance(e.b, Constant) and not math.isnan(e.b.value))


def bound(op: BinaryOp, a: str, c: str) -> str:
    """maximum(a, c) or minimum(a, c) for a constant c that is not NaN, as eager's relu and
    clamp give it: a NaN a stays NaN, and a tie keeps a (relu(-0.0) is -0.0). One compare
    and select, which is one vmaxps / vminps (NaN-propagating maximum takes four)."""
    return f"({a} < {c} ? {c} : {a})" if op is BinaryOp.MAXIMUM else f"({a} > {c} ? {c} : {a})"


def reduce_init(kind: str, dtype: DType) -> str:
    if kind == "sum":
        return literal(0, dtype)
    if kind == "prod":
        return literal(1, dtype)
    if kind == "any":
        return "false"
    if kind == "all":
        return "true"
    if dtype.is_floating:
        return literal(-math.inf if kind == "max" else math.inf, dtype)
    if dtype is DType.bool:
        return "false" if kind == "max" else "true"
    return f"std::numeric_limits<{dtype.ctype}>::{'lowest' if kind == 'max' else 'max'}()"


def _round_half(v: float, dtype: DType) -> float:
    """`v` rounded to float16 or bfloat16 precision (nearest, ties to even), without torch."""
    if math.isnan(v) or math.isinf(v):
        return v
    if dtype is DType.float16:
        try:
            return struct.unpack("<e", struct.pack("<e", v))[0]
        except OverflowError:
            return math.copysign(math.inf, v)
    bits = struct.unpack("<I", struct.pack("<f", v))[0]
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]
