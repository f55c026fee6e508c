"""The Fourier-transform template: one 1-D transform of kernels/fft.cpp along the middle of a
contiguous buffer viewed as [outer, length, inner] (codegen: codegen/cpp/templates/fft.py; the
ops built on it: lowering/fft.py). A complex value is its (real, imag) pair."""
from __future__ import annotations

import enum
from dataclasses import dataclass

import sympy

from .nodes import Template


class FftKind(enum.Enum):
    """Which kernel: what `x` and the output hold."""

    C2C = "c2c"  # complex [outer, length, inner] -> complex [outer, length, inner]
    R2C = "r2c"  # real [outer, length, inner] -> complex [outer, spectrum, inner] (forward)
    C2R = "c2r"  # complex [outer, spectrum, inner] -> real [outer, length, inner] (inverse)


class FftNorm(enum.IntEnum):
    """What each result is multiplied by: torch's normalization codes."""

    NONE = 0
    BY_SQRT_N = 1  # 1 / sqrt(norm_size)
    BY_N = 2  # 1 / norm_size


@dataclass(frozen=True)
class Fft(Template):
    """The transform of each line of `x` of `length` values (its signal, real or complex);
    `spectrum`: the complex values per line on the other side (r2c: those kept, c2r: those
    read, the rest taken by Hermitian symmetry; c2c: length)."""

    kind: FftKind
    x: str
    outer: sympy.Expr
    length: sympy.Expr
    inner: sympy.Expr
    spectrum: sympy.Expr
    inverse: bool = False
    norm: FftNorm = FftNorm.NONE
    norm_size: sympy.Expr = sympy.Integer(1)

    def __post_init__(self) -> None:
        if self.kind is FftKind.R2C and self.inverse or self.kind is FftKind.C2R and not self.inverse:
            raise ValueError(f"fft: {self.kind.value} goes one way only")

    def reads(self) -> tuple[str, ...]:
        return (self.x,)

    def describe(self) -> str:
        way = "inverse" if self.inverse else "forward"
        norm = "" if self.norm is FftNorm.NONE else f", scaled {self.norm.name.lower()} " \
            f"({self.norm_size})"
        return (f"fft {self.kind.value} {way} of {self.x} over [{self.outer}, {self.length}, "
                f"{self.inner}] along the middle, spectrum {self.spectrum}{norm}")

    def flops(self) -> sympy.Expr:
        """~ 5 n log2 n per line; 0 (no rate in the profile) for a length known only at run
        time, whose logarithm has no run-time form."""
        if not self.length.is_Integer:
            return sympy.Integer(0)
        return self.outer * self.inner * 5 * self.length * max(1, int(self.length - 1).bit_length())
