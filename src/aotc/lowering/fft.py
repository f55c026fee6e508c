"""Discrete Fourier transforms on the shipped kernel (kernels/fft.cpp): aten._fft_c2c,
_fft_r2c, _fft_c2r and the prims torch's references reach (what torch.fft's functions
decompose into), and stft. These rules take complex values as their pairs (`on_pairs`)."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import Binary, BinaryOp, IndexValue, Node, Where, cast, constant
from ..ir.fft import Fft, FftKind, FftNorm
from ..ir.symbols import index_vars, numel
from .context import LoweringContext, TensorValue
from .padding import constant_pad
from .registry import register_lowering
from .views import remap

aten = torch.ops.aten
prims = torch.ops.prims
FAMILY = "fft"
KERNEL_DTYPES = (DType.float32, DType.float64)
ONE = sympy.Integer(1)


def _check_dtype(ctx: LoweringContext, x: TensorValue) -> None:
    if x.dtype not in KERNEL_DTYPES:
        raise UnsupportedOperatorError(ctx.target, ctx.source, f"of {x.dtype.name} (the "
                                       "Fourier transforms take float32 or float64 values, "
                                       "complex64 or complex128)")


def _dims(ctx: LoweringContext, dims, ndim: int) -> list[int]:
    """The transformed dims, non-negative, in the op's order."""
    out = [int(d) + ndim if int(d) < 0 else int(d) for d in dims]
    if any(not 0 <= d < ndim for d in out) or len(set(out)) != len(out):
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       f"with dims {list(dims)} of a tensor of rank {ndim}")
    return out


def _norm(ctx: LoweringContext, normalization: int) -> FftNorm:
    try:
        return FftNorm(int(normalization))
    except ValueError:
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       f"with normalization {normalization}") from None


def _contiguous(ctx: LoweringContext, x: TensorValue) -> str:
    """x as a contiguous buffer of its own (copied when a view), its name."""
    if x.buffer_name() is None:
        x = ctx.pointwise(x.body, x.sizes, hint=f"{ctx.node_name}_x")
    name = x.buffer_name()
    assert name is not None
    return name


def _transform(ctx: LoweringContext, x: TensorValue, kind: FftKind, sizes: tuple, d: int,
               length, spectrum, inverse: bool, norm: FftNorm = FftNorm.NONE,
               norm_size: sympy.Expr = ONE) -> TensorValue:
    """One kernel call along dim d of the signal sizes `sizes` (complex dims for a complex x,
    without the pair dim); the result's sizes are `sizes` with dim d the other side's."""
    outer, inner = numel(tuple(sizes[:d])), numel(tuple(sizes[d + 1:]))
    length, spectrum = sympy.sympify(length), sympy.sympify(spectrum)
    op = Fft(kind, _contiguous(ctx, x), outer, length, inner, spectrum, inverse, norm,
             norm_size if norm is not FftNorm.NONE else ONE)
    out_len = length if kind is FftKind.C2R else spectrum
    out = tuple(sizes[:d]) + (out_len,) + tuple(sizes[d + 1:])
    if kind is not FftKind.C2R:
        out += (sympy.Integer(2),)
    return ctx.emit(op, out, x.dtype, hint=f"{ctx.node_name}_{kind.value}")


def fft_c2c(ctx: LoweringContext, x: TensorValue, dims, norm: FftNorm, forward: bool,
            norm_size: sympy.Expr | None = None) -> TensorValue:
    """The complex transform of pairs x along each of `dims` in turn, scaled once at the end
    by `norm_size` (the product of their lengths unless given)."""
    _check_dtype(ctx, x)
    sizes = x.sizes[:-1]
    dims = _dims(ctx, dims, len(sizes))
    total = numel(tuple(sizes[d] for d in dims)) if norm_size is None else norm_size
    for k, d in enumerate(dims):
        last = k == len(dims) - 1
        x = _transform(ctx, x, FftKind.C2C, sizes, d, sizes[d], sizes[d], not forward,
                       norm if last else FftNorm.NONE, total)
    return x


def fft_r2c(ctx: LoweringContext, x: TensorValue, dims, norm: FftNorm, onesided: bool
            ) -> TensorValue:
    """The forward transform of real x: along the last of `dims` from real (its first
    n // 2 + 1 values when onesided), then complex along the others."""
    _check_dtype(ctx, x)
    sizes = x.sizes
    dims = _dims(ctx, dims, len(sizes))
    if not dims:
        raise UnsupportedOperatorError(ctx.target, ctx.source, "over no dims")
    total = numel(tuple(sizes[d] for d in dims))
    d = dims[-1]
    n = sizes[d]
    spectrum = ctx.out_sizes[d]  # n // 2 + 1 when onesided, as export sized it
    rest = dims[:-1]
    y = _transform(ctx, x, FftKind.R2C, sizes, d, n, spectrum, False,
                   FftNorm.NONE if rest else norm, total)
    return fft_c2c(ctx, y, rest, norm, True, total) if rest else y


def fft_c2r(ctx: LoweringContext, x: TensorValue, dims, norm: FftNorm, last_dim_size
            ) -> TensorValue:
    """The inverse transform to real: complex along all but the last of `dims`, then from
    the Hermitian half along the last, `last_dim_size` real values."""
    _check_dtype(ctx, x)
    sizes = x.sizes[:-1]
    dims = _dims(ctx, dims, len(sizes))
    if not dims:
        raise UnsupportedOperatorError(ctx.target, ctx.source, "over no dims")
    d = dims[-1]
    n = sympy.sympify(last_dim_size)
    total = numel(tuple(sizes[k] for k in dims[:-1])) * n
    if dims[:-1]:
        x = fft_c2c(ctx, x, dims[:-1], FftNorm.NONE, False)
    return _transform(ctx, x, FftKind.C2R, sizes, d, n, sizes[d], True, norm, total)


@register_lowering(aten._fft_c2c.default, family=FAMILY, on_pairs=True)
def lower_fft_c2c(ctx, x, dim, normalization, forward):
    return fft_c2c(ctx, x, dim, _norm(ctx, normalization), forward)


@register_lowering(aten._fft_r2c.default, family=FAMILY, on_pairs=True)
def lower_fft_r2c(ctx, x, dim, normalization, onesided):
    return fft_r2c(ctx, x, dim, _norm(ctx, normalization), onesided)


@register_lowering(aten._fft_c2r.default, family=FAMILY, on_pairs=True)
def lower_fft_c2r(ctx, x, dim, normalization, last_dim_size):
    return fft_c2r(ctx, x, dim, _norm(ctx, normalization), last_dim_size)


@register_lowering(prims.fft_c2c.default, family=FAMILY, on_pairs=True)
def lower_prims_fft_c2c(ctx, x, *, dim, forward):
    return fft_c2c(ctx, x, dim, FftNorm.NONE, forward)


@register_lowering(prims.fft_r2c.default, family=FAMILY, on_pairs=True)
def lower_prims_fft_r2c(ctx, x, *, dim, onesided):
    return fft_r2c(ctx, x, dim, FftNorm.NONE, onesided)


@register_lowering(prims.fft_c2r.default, family=FAMILY, on_pairs=True)
def lower_prims_fft_c2r(ctx, x, *, dim, last_dim_size):
    return fft_c2r(ctx, x, dim, FftNorm.NONE, last_dim_size)


@register_lowering(aten.stft.default, family=FAMILY, on_pairs=True)
def lower_stft(ctx, x, n_fft, hop_length=None, win_length=None, window=None, normalized=False,
               onesided=None, return_complex=None, align_to_window=None):
    """Frames of x [batch?, length] every hop values, times the window (centered in n_fft),
    each transformed (from real, or complex for a complex signal or window):
    [batch?, freq, frames], or its pairs with return_complex=False (torch.stft pads for
    `center` before the op)."""
    signal, example_window = ctx.example_args[0], _arg(ctx, 4, "window")
    if align_to_window:
        raise UnsupportedOperatorError(ctx.target, ctx.source, "with align_to_window")
    _check_dtype(ctx, x)
    complex_signal = signal.dtype.is_complex
    complex_window = example_window is not None and example_window.dtype.is_complex
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    k = x.ndim - 1 - int(complex_signal)  # batch dims
    batch = x.sizes[:k]
    frames, freq = ctx.out_sizes[k + 1], ctx.out_sizes[k]
    body = _windowed(ctx, x, k, hop, complex_signal, complex_window, window, n_fft, win)
    pair = (sympy.Integer(2),) if complex_signal or complex_window else ()
    framed = ctx.pointwise(body, batch + (frames, sympy.Integer(n_fft)) + pair,
                           hint=f"{ctx.node_name}_frames")
    norm = FftNorm.BY_SQRT_N if normalized else FftNorm.NONE
    sizes = batch + (frames, sympy.Integer(n_fft))
    if pair:
        spectrum = fft_c2c(ctx, framed, [k + 1], norm, True)
    else:
        spectrum = _transform(ctx, framed, FftKind.R2C, sizes, k + 1, n_fft, freq, False, norm,
                              sympy.Integer(n_fft))
    jv = index_vars(k + 3)
    return remap(spectrum, batch + (freq, frames, sympy.Integer(2)),
                 tuple(jv[:k]) + (jv[k + 1], jv[k], jv[k + 2]))


def _windowed(ctx: LoweringContext, x: TensorValue, k: int, hop: int, complex_signal: bool,
              complex_window: bool, window: TensorValue | None, n_fft: int, win: int):
    """The body of the frames [*batch, frame f, t (, part)]: x[..., f*hop + t] times the
    window zero-padded to n_fft, a complex product where either is complex."""
    iv = index_vars(k + 2 + int(complex_signal or complex_window))
    f, t = iv[k], iv[k + 1]

    def sample(part: int | None) -> Node:
        return x.load(tuple(iv[:k]) + (f * hop + t,) + (() if part is None else (part,)))

    if window is None:
        return sample(iv[-1] if complex_signal else None)
    left = (n_fft - win) // 2
    pads = [0, 0, left, n_fft - win - left] if complex_window else [left, n_fft - win - left]
    padded = constant_pad(ctx, window, pads, 0)

    def weight(part: int | None) -> Node:
        return cast(padded.load((t,) if part is None else (t, part)), x.dtype)

    def mul(a: Node, b: Node) -> Node:
        return Binary(BinaryOp.MUL, a, b, x.dtype)

    if not complex_window:
        return mul(sample(iv[-1] if complex_signal else None), weight(None))
    if not complex_signal:
        return mul(sample(None), weight(iv[-1]))
    re = Binary(BinaryOp.SUB, mul(sample(0), weight(0)), mul(sample(1), weight(1)), x.dtype)
    im = Binary(BinaryOp.ADD, mul(sample(0), weight(1)), mul(sample(1), weight(0)), x.dtype)
    first = Binary(BinaryOp.EQ, IndexValue(iv[-1], DType.int64), constant(0, DType.int64),
                   DType.bool)
    return Where(first, re, im, x.dtype)


def _arg(ctx: LoweringContext, position: int, name: str):
    """An argument's example value as export recorded it (positional or keyword)."""
    if len(ctx.example_args) > position:
        return ctx.example_args[position]
    return ctx.example_kwargs.get(name)
