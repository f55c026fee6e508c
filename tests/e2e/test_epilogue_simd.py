"""Integer products' epilogues as AVX-512 intrinsics (codegen/cpp/templates/epilogue_simd.py)
against eager and against the plain loop the other levels compile: a relu after _int_mm over
NaN, infinities and signed zeros (vmaxps(c, a) is `a < c ? c : a` only in that operand
order), blocks whose columns end in a partial vector, per-row numbers read once a row (also
in whole chunks of 64 columns, where the per-column values are read once a chunk), an
erf-GELU, requantizations (clamped, then converted half to even) to uint8 and int8 with and
without a zero point and a relu before them, narrowed four vectors at a time, and quantized
convolutions; bodies with no vector form keep the plain loop."""
from __future__ import annotations

import pytest
import torch
from quantized_models import ConvNet, assert_close_to_largest, pt2e_static_int8

import aotc
from aotc.codegen.cpp.templates import epilogue_simd
from aotc.target.host import cpu_flags

pytest.importorskip("torchao")

GUARD = f"#if {epilogue_simd.GUARD}"
needs_avx512 = pytest.mark.skipif(not {"avx512f", "avx512bw", "avx512vl"} <= cpu_flags(),
                                  reason="this CPU has no AVX-512 BW/VL: the plain loop runs")


class ScaledRelu(torch.nn.Module):
    """The product's sums scaled, a float input added (read along the row) and a relu: one
    epilogue over 70 columns (four whole vectors and 6 lanes)."""

    def forward(self, a, b, y):
        return torch.relu(torch._int_mm(a, b).float() * 0.01 + y)


class RowScaled(torch.nn.Module):
    """A number per row (the same along it: one broadcast) and a clamp on both sides."""

    def forward(self, a, b, s):
        return torch.clamp(torch._int_mm(a, b).float() * s, -40.0, 40.0)


def _compile(module, args, tmp_path, isa="host"):
    with torch.no_grad():
        ep = torch.export.export(module.eval(), args)
        path = aotc.compile_and_package(ep, package_path=tmp_path / f"{isa}.pt2",
                                        options={"isa": isa, "int8_kernels": "on",
                                                 "debug_dir": str(tmp_path / isa)})
    code = (tmp_path / isa / "model" / "07_codegen.cpp").read_text()
    return ep, aotc.load_package(path), code


def _ints(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    lo, hi = (0, 256) if dtype is torch.uint8 else (-128, 128)
    return torch.randint(lo, hi, shape, generator=g, dtype=dtype)


@needs_avx512
def test_relu_keeps_nan_and_the_partial_vector(tmp_path):
    a, b = _ints((37, 64), torch.int8, 1), _ints((64, 70), torch.int8, 2)
    y = torch.randn(37, 70)
    y[0, :7] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0,
                             -float("nan"), 1e30])
    y[5, 64:] = float("nan")  # lanes of the last, partial vector
    ep, model, code = _compile(ScaledRelu(), (a, b, y), tmp_path)
    assert code.count(GUARD) == code.count("aotc_qgemm_s32(") == 1
    want = ep.module()(a, b, y)
    got = model(a, b, y)
    torch.testing.assert_close(got, want, equal_nan=True)
    assert torch.equal(got.isnan(), want.isnan())
    assert torch.equal(torch.signbit(got), torch.signbit(want))  # relu(-0.0) is -0.0


@needs_avx512
@pytest.mark.parametrize("cols", [33, 130])  # 16-column steps; two whole chunks and 2 lanes
def test_a_number_per_row_is_read_once_a_row(tmp_path, cols):
    a, b = _ints((19, 100), torch.uint8, 3), _ints((100, cols), torch.int8, 4)
    s = torch.rand(19, 1) * 0.02
    s[3] = float("nan")
    ep, model, code = _compile(RowScaled(), (a, b, s), tmp_path)
    assert GUARD in code and "_mm512_set1_ps(" in code
    torch.testing.assert_close(model(a, b, s), ep.module()(a, b, s), equal_nan=True)


class Requantized(torch.nn.Module):
    """The scaled sums plus a float input, maybe through a relu, quantized per tensor."""

    def __init__(self, dtype: torch.dtype, zero: int, relu: bool):
        super().__init__()
        self.dtype, self.zero, self.relu = dtype, zero, relu

    def forward(self, a, b, y):
        v = torch._int_mm(a, b).float() * 0.01 + y
        if self.relu:
            v = torch.relu(v)
        lo, hi = (0, 255) if self.dtype is torch.uint8 else (-128, 127)
        return torch.ops.quantized_decomposed.quantize_per_tensor(v, 0.05, self.zero, lo, hi,
                                                                  self.dtype)


@needs_avx512
@pytest.mark.parametrize("dtype, zero, relu", [
    (torch.uint8, 0, True),  # the relu left out: the lower bound 0 - 0 stops the negatives
    (torch.uint8, 5, True),  # kept: a negative value is 5, not 0
    (torch.uint8, 128, False),
    (torch.int8, 0, True),  # kept: -128 - 0 < 0
    (torch.int8, -3, False)])
def test_requantizations_are_eagers_and_the_plain_loops(tmp_path, dtype, zero, relu):
    """130 columns: two whole chunks (narrowed to bytes 64 at a time) and two lanes (16 at a
    time). NaN quantizes to 0, as eager's; infinities and values far outside the range to
    the bounds; values on both sides of each bound and ties of rounding half to even."""
    import torchao.quantization.pt2e  # noqa: F401  (the quantized_decomposed ops)

    a, b = _ints((23, 48), torch.uint8, 9), _ints((48, 130), torch.int8, 10)
    y = torch.linspace(-9.0, 9.0, 23 * 130).reshape(23, 130)
    y[3] = torch.arange(130) * 0.025 - 1.6  # whole and half quanta (0.05) after the sums
    a[3] = 0
    for row, cols in ((0, [0, 1, 2, 63, 64, 127, 128, 129]), (7, [5, 70, 129])):
        y[row, cols] = torch.tensor([float("nan"), float("inf"), -float("inf"), 1e30, -1e30,
                                     float("nan"), 12.75, -6.4])[:len(cols)]
    module = Requantized(dtype, zero, relu)
    ep, vector, code = _compile(module, (a, b, y), tmp_path)
    assert GUARD in code and "_mm512_cvt_roundps_epi32" in code and "aotc::bytes64" in code
    _, plain, _ = _compile(module, (a, b, y), tmp_path, isa="avx2")
    got, want = vector(a, b, y), ep.module()(a, b, y)
    assert got.dtype == want.dtype == dtype
    torch.testing.assert_close(got, plain(a, b, y), rtol=0, atol=0)
    assert got[0, 0] == got[0, 127] == got[7, 5] == want[0, 0] == 0  # NaN
    assert (got.int() - want.int()).abs().max() <= 1  # a tie of float sums' order, at most
    assert (got != want).float().mean() <= 0.001


@needs_avx512
@pytest.mark.parametrize("quantizer", ["x86", "xnnpack"])  # uint8 / int8 activations
@pytest.mark.parametrize("width", [20, 84])  # 16 + 4 columns; a whole chunk of 64 and 20
def test_requantizing_convolutions_agree_with_the_plain_loop(tmp_path, quantizer, width):
    """Each product's epilogue takes the vector form; the AVX2 build of the same program (the
    plain loop) gives the same outputs, and both are the quantized module's."""
    torch.manual_seed(0)
    batches = [torch.randn(2, 3, 9, 11) for _ in range(3)]
    model = ConvNet(width=width)
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 2.0)
    ep = pt2e_static_int8(model, batches[0], batches[:2], quantizer)
    with torch.no_grad():
        vector = aotc.compile_and_package(ep, package_path=tmp_path / "v.pt2", options={
            "int8_kernels": "on", "debug_dir": str(tmp_path / "v")})
        plain = aotc.compile_and_package(ep, package_path=tmp_path / "p.pt2", options={
            "int8_kernels": "on", "isa": "avx2"})
    code = (tmp_path / "v" / "model" / "07_codegen.cpp").read_text()
    products = code.count("aotc_qconv_s32(")
    # the head writes its float result channels first: that epilogue stays the plain loop
    assert products == 3 and code.count(GUARD) == products - 1
    vector, plain = aotc.load_package(vector), aotc.load_package(plain)
    for x in batches:
        want = ep.module()(x)
        got = vector(x)
        assert_close_to_largest(got, want)
        torch.testing.assert_close(got, plain(x), rtol=0, atol=0)


class ShiftedGelu(torch.nn.Module):
    """An erf-GELU (erf on 16 lanes: aotc::erf16) of the scaled sums plus a float input."""

    def forward(self, a, b, y):
        return torch.nn.functional.gelu(torch._int_mm(a, b).float() * 0.002 + y)


@needs_avx512
def test_erf_gelu_is_the_plain_loops(tmp_path):
    """Both sides of |x| = 1 and 3.92 (erf's two polynomials and its rounding to 1), NaN and
    infinities: the vector erf gives what the AVX2 build's scalar erf gives, bit for bit."""
    a, b = _ints((29, 96), torch.int8, 7), _ints((96, 40), torch.int8, 8)
    y = torch.linspace(-6.0, 6.0, 29 * 40).reshape(29, 40)
    y[0, :5] = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0])
    ep, vector, code = _compile(ShiftedGelu(), (a, b, y), tmp_path)
    assert GUARD in code and "aotc::erf16(" in code
    _, plain, _ = _compile(ShiftedGelu(), (a, b, y), tmp_path, isa="avx2")
    got = vector(a, b, y)
    torch.testing.assert_close(got, plain(a, b, y), rtol=0, atol=0, equal_nan=True)
    want = ep.module()(a, b, y)
    assert want[0, 1].isnan() and got[0, 1] == float("inf")  # the limit (tests/kernels/test_math.py)
    want[0, 1] = got[0, 1]
    torch.testing.assert_close(got, want, equal_nan=True)


def test_a_body_without_a_vector_form_keeps_the_plain_loop(tmp_path):
    class Gelu(torch.nn.Module):  # the tanh form: no vector tanh here
        def forward(self, a, b):
            return torch.nn.functional.gelu(torch._int_mm(a, b).float() * 0.001,
                                            approximate="tanh")

    a, b = _ints((17, 32), torch.int8, 5), _ints((32, 48), torch.int8, 6)
    ep, model, code = _compile(Gelu(), (a, b), tmp_path)
    assert GUARD not in code and "epilogue_" in code
    torch.testing.assert_close(model(a, b), ep.module()(a, b))
