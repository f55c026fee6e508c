"""Special float values: signbit and copysign (the sign bit of -0.0 and -NaN counts, as
PyTorch reads it), fmax/fmin (a NaN operand is ignored), gcd/lcm of zeros and negatives,
nextafter in the operand's own type, hypot without overflow."""
from __future__ import annotations

import pytest
import torch

NAN, INF = float("nan"), float("inf")


class Signs(torch.nn.Module):
    def forward(self, a, b, i):
        return torch.signbit(a), torch.copysign(a, b), torch.copysign(a, -2.0), \
            torch.copysign(i, b), torch.signbit(i)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float16, torch.bfloat16), ids=str)
def test_signs_match_eager(dtype, compile_model):
    a = torch.tensor([1.5, -0.0, 0.0, -NAN, NAN, -INF, INF, -3.25] * 5, dtype=dtype)
    b = torch.tensor([-0.0, 0.0, -1.0, 2.0, -NAN, NAN, -INF, 1.0] * 5, dtype=dtype)
    i = torch.tensor([-3, 0, 4, -1, 7, 0, -9, 2] * 5)
    ep, model = compile_model(Signs(), (a, b, i))
    got, want = model(a, b, i), ep.module()(a, b, i)
    for g, w in zip(got, want):
        # equal_nan compares NaN with NaN; the sign of each NaN is checked through signbit
        torch.testing.assert_close(g, w, equal_nan=True)
        if g.is_floating_point():
            torch.testing.assert_close(torch.signbit(g), torch.signbit(w))


class NanAware(torch.nn.Module):
    def forward(self, a, b):
        return torch.fmax(a, b), torch.fmin(a, b), torch.maximum(a, b), torch.minimum(a, b)


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16), ids=str)
def test_fmax_fmin_ignore_one_nan(dtype, compile_model):
    a = torch.tensor([1.0, NAN, NAN, -INF, 2.0, -0.0] * 6, dtype=dtype)
    b = torch.tensor([NAN, 3.0, NAN, 1.0, -5.0, 0.0] * 6, dtype=dtype)
    ep, model = compile_model(NanAware(), (a, b))
    for g, w in zip(model(a, b), ep.module()(a, b)):
        torch.testing.assert_close(g, w, equal_nan=True)


class Divisors(torch.nn.Module):
    def forward(self, a, b):
        return torch.gcd(a, b), torch.lcm(a, b)


@pytest.mark.parametrize("dtype", (torch.int64, torch.int32, torch.int16), ids=str)
def test_gcd_lcm_of_zeros_and_negatives(dtype, compile_model):
    a = torch.tensor([0, 0, 12, -12, 7, -9, 1, 30], dtype=dtype)
    b = torch.tensor([0, 5, -18, -8, 0, 6, -1, 45], dtype=dtype)
    ep, model = compile_model(Divisors(), (a, b))
    for g, w in zip(model(a, b), ep.module()(a, b)):
        torch.testing.assert_close(g, w)


class Next(torch.nn.Module):
    def forward(self, a, b):
        return torch.nextafter(a, b)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float16, torch.bfloat16), ids=str)
def test_nextafter_steps_one_ulp_of_the_dtype(dtype, compile_model):
    a = torch.tensor([1.0, 1.0, 0.0, -0.0, 3.5, INF, NAN, 2.0], dtype=dtype)
    b = torch.tensor([2.0, 0.0, 1.0, -1.0, 3.5, 0.0, 1.0, NAN], dtype=dtype)
    ep, model = compile_model(Next(), (a, b))
    torch.testing.assert_close(model(a, b), ep.module()(a, b), equal_nan=True, atol=0, rtol=0)


class Hypot(torch.nn.Module):
    def forward(self, a, b):
        return torch.hypot(a, b), torch.eye(3, 5, dtype=a.dtype)


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16), ids=str)
def test_hypot_does_not_overflow_in_its_squares(dtype, compile_model):
    a = torch.tensor([3.0, 1e30, -1e30, 0.0, INF, NAN, 1e-30, -4.0], dtype=dtype)
    b = torch.tensor([4.0, 1e30, 2.0, -0.0, NAN, 1.0, 1e-30, 0.0], dtype=dtype)
    ep, model = compile_model(Hypot(), (a, b))
    for g, w in zip(model(a, b), ep.module()(a, b)):
        torch.testing.assert_close(g, w, equal_nan=True)


class FloatParts(torch.nn.Module):
    def forward(self, x):
        mantissa, exponent = torch.frexp(x)
        return (mantissa, exponent, torch.angle(x), torch.round(x, decimals=3),
                torch.round(x, decimals=-2), torch.round(x, decimals=0),
                torch.round(x, decimals=50))


@pytest.mark.parametrize("dtype", (torch.float32, torch.float16, torch.bfloat16), ids=str)
def test_frexp_angle_round_decimals_match_eager(dtype, compile_model):
    # zeros of both signs, subnormals, ties of the decimal rounding, infinities and NaN
    x = torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -7.25, 1e-6, -2.5e-7, 6e-8, 0.0625,
                      1.2345, -2.0005, 150.0, -250.0, 1234.5, 31000.0, INF, -INF, NAN, -NAN,
                      0.0015, 2.5, -0.5], dtype=dtype)
    ep, model = compile_model(FloatParts(), (x,))
    got, want = model(x), ep.module()(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, equal_nan=True)


class AngleOfInts(torch.nn.Module):
    def forward(self, i, b):
        return torch.angle(i), torch.angle(b)


def test_angle_of_integers_and_bools(compile_model):
    i, b = torch.tensor([-3, 0, 5, -1]), torch.tensor([True, False, True, False])
    ep, model = compile_model(AngleOfInts(), (i, b))
    for g, w in zip(model(i, b), ep.module()(i, b)):
        torch.testing.assert_close(g, w)
