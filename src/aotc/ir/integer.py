"""Integer templates: the int8 products of quantized programs, computed by
kernels/gemm_int8.cpp with exact int32 sums (codegen: codegen/cpp/templates/qgemm.py)."""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from .expr import IndirectLoad, Node, loads
from .nodes import Operand, TakesEpilogue, Template, int8_packed_rows


@dataclass(frozen=True)
class IntMatmul(TakesEpilogue, Template):
    """out[m, n] = sum over k of (a[m, k] - a_zero) * b[k, n] in int32 (aten._int_mm with
    a_zero 0), out contiguous.

    `a` is int8 (`a_signed`) or uint8 with unit column stride (rows `a.strides[0]` apart),
    `b` int8 with any (row, column) strides. B goes into the kernel's dot-product layout in
    the workspace on each run, then the product; with `b_packed`, b names a constant stored
    in that layout (its ConstantSpec.packing, a PackedInt8B) and nothing is packed."""

    a: Operand  # (row, column) strides
    b: Operand  # (row, column) strides
    m: sympy.Expr
    n: sympy.Expr
    k: sympy.Expr
    a_signed: bool
    b_packed: bool = False
    a_zero: int = 0  # subtracted from every element of a (a quantized activation's zero point)
    # else the one-element buffer holding the zero point, computed at run time (dynamic
    # quantization: choose_qparams)
    a_zero_buffer: str | None = None
    # A convolution's product (aotc_qconv_s32): `a` names its input [batch, c, h, w], read
    # as its patches with this geometry (c, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw),
    # and out is [batch, n, oh, ow] (channels first); b is the weight as [c*kh*kw, n].
    patches: tuple[int, ...] | None = None
    # the patches' columns tap-major, (ky, kx, ci): the kernel copies the input channels
    # last into the workspace and each tap's c bytes whole; b packed to match
    taps_major: bool = False
    # channels first, the patches' columns ordered by kernel rows padded to whole groups,
    # (ci, ky, kx < kwp), kwp = kw rounded up to a multiple of 4, zero weights past kw: a
    # group is four neighbouring taps of one input row (scheduler/layout.py: row_groups)
    row_groups: bool = False
    # channels-last activations (scheduler/layout.py): with taps_major, `a` names the input
    # as [batch, h, w, c], read in place (no copy); the output [batch, oh, ow, n], row-major
    # like a product's, instead of channels first
    x_channels_last: bool = False
    out_channels_last: bool = False
    # a pointwise consumer of the sums (dequantize, bias, residual, activation, requantize)
    # run on each finished block: the buffer then holds its values (uint8, float32, ...)
    epilogue: Node | None = None
    epilogue_source: str = ""

    def taps(self) -> int:
        """How many taps b's rows are reordered over (aotc_qconv_pack_b); 1: none."""
        if not self.taps_major or self.patches is None:
            return 1
        return self.patches[3] * self.patches[4]

    def row_taps(self) -> int:
        """The kernel row's taps b's rows are padded over (aotc_qconv_pack_b_rows); 0: none."""
        return self.patches[4] if self.row_groups and self.patches is not None else 0

    def packed_rows(self) -> sympy.Expr:
        """B's rows as packed: k, a tap-major convolution's taps * channels(), or k with each
        kernel row of row_taps() padded to a multiple of 4."""
        if self.taps() > 1 or self.row_taps():  # a convolution: static sizes
            return sympy.Integer(int8_packed_rows(int(self.k), self.taps(), self.row_taps()))
        return sympy.sympify(self.k)

    def channels(self) -> int:
        """The input channels a tap-major convolution's patches hold per tap: c rounded up
        to a multiple of 4 (zero weights on the padding)."""
        assert self.patches is not None
        return -(-self.patches[0] // 4) * 4

    def pack_bytes(self) -> sympy.Expr:
        """A bound on aotc_qgemm_packed_bytes of B's rows (k, or a tap-major convolution's
        taps * channels()) and n: rows rounded up to whole tiles of 64 and n to panels of
        16 bytes of int8, then 16-padded int32 column sums; none for a packed B."""
        if self.b_packed:
            return sympy.Integer(0)
        rows = self.packed_rows()
        n = sympy.sympify(self.n) + 15
        return sympy.expand((rows + 63) * n + 4 * n)

    def reads(self) -> tuple[str, ...]:
        zero = (self.a_zero_buffer,) if self.a_zero_buffer else ()
        return tuple(dict.fromkeys((self.a.buffer, self.b.buffer, *zero,
                                    *self.epilogue_reads())))

    def with_epilogue(self, source: str, body: Node) -> IntMatmul | None:
        """Any body without data-dependent loads: the kernel hands it each block of sums."""
        if any(isinstance(ld, IndirectLoad) for ld in loads(body)):
            return None
        return self.then(source, body)

    def flops(self) -> sympy.Expr:
        return 2 * self.m * self.n * self.k  # integer operations

    def workspace(self) -> sympy.Expr:
        """B's packing (pack_bytes), then a tap-major convolution's channels-last copy of
        its input (unless the input is channels last already)."""
        if not self.taps_major or self.patches is None or self.x_channels_last:
            return self.pack_bytes()
        _, h, w, _, _, oh, ow = self.patches[:7]
        batch = sympy.sympify(self.m) / (oh * ow)
        return sympy.expand(self.pack_bytes() + batch * self.channels() * h * w)

    def describe(self) -> str:
        kind = "s8" if self.a_signed else "u8"
        packed = " (packed)" if self.b_packed else ""
        zero = (f" - {self.a_zero_buffer}[0]" if self.a_zero_buffer
                else f" - {self.a_zero}" if self.a_zero else "")
        if self.patches is not None:
            c, h, w, kh, kw = self.patches[:5]
            order = (", tap-major" if self.taps_major
                     else ", kernel rows in whole groups" if self.row_groups else "")
            x = f"[.., {h}, {w}, {c}]" if self.x_channels_last else f"[.., {c}, {h}, {w}]"
            out = f"[.., {self.n}]" if self.out_channels_last else f"[.., {self.n}, ..]"
            return (f"int conv ({kind} {self.a.buffer}{zero}) {x} x s8 "
                    f"{self.b.buffer}{packed} {kh}x{kw}{order} -> s32 {out}"
                    f"{self.describe_epilogue()}")
        return (f"int matmul ({kind} {self.a.buffer}{zero}) x s8 {self.b.buffer}{packed} "
                f"[{self.m}, {self.k}] x [{self.k}, {self.n}] -> s32{self.describe_epilogue()}")
