"""Quantize, dequantize and choose_qparams ops (PT2E's quantized_decomposed and torchao's
affine ones) and aten._int_mm against eager: integer results within one quantum on at most
0.1% of elements (a float product a rounding tie away from the next step), float results at
float32 tolerance, integer GEMMs exactly."""
from __future__ import annotations

import pytest
import torch

qd = torch.ops.quantized_decomposed
pytest.importorskip("torch.ao.quantization.fx._decomposed")  # registers quantized_decomposed


def assert_within_one_quantum(got: torch.Tensor, want: torch.Tensor) -> None:
    """Integer tensors equal but for steps of one on at most 0.1% of their elements."""
    assert got.dtype == want.dtype and got.shape == want.shape
    diff = (got.to(torch.int64) - want.to(torch.int64)).abs()
    assert int(diff.max()) <= 1 if diff.numel() else True
    assert float((diff > 0).float().mean()) <= 0.001 if diff.numel() else True


def compare(got, want) -> None:
    for g, w in zip(got, want):
        if w.is_floating_point():
            torch.testing.assert_close(g, w)
        else:
            assert_within_one_quantum(g, w)


class PerTensor(torch.nn.Module):
    """Every per-tensor overload: float scalars, 0-dim tensor qparams, tensor bounds too."""

    def forward(self, x, scale, zero_point):
        a = qd.quantize_per_tensor.default(x, 0.05, 3, 0, 255, torch.uint8)
        b = qd.quantize_per_tensor.tensor(x, scale, zero_point, -128, 127, torch.int8)
        lo, hi = torch.tensor(-128), torch.tensor(127)
        c = qd.quantize_per_tensor.tensor2(x, scale, zero_point, lo, hi, torch.int8)
        return (a, b, c, qd.dequantize_per_tensor.default(a, 0.05, 3, 0, 255, torch.uint8),
                qd.dequantize_per_tensor.tensor(b, scale, zero_point, -128, 127, torch.int8),
                qd.dequantize_per_tensor.tensor2(c, scale, zero_point, lo, hi, torch.int8))


def test_per_tensor_overloads(compile_model):
    torch.manual_seed(0)
    # x * (1 / 0.05) lands on half-way points: they round to even as torch.round does
    x = torch.cat([torch.randn(2, 300) * 4, torch.arange(-40, 40).float().div(40).view(2, 40)], 1)
    args = (x, torch.tensor(0.03), torch.tensor(-2))
    ep, model = compile_model(PerTensor(), args)
    compare(model(*args), ep.module()(*args))


class PerChannel(torch.nn.Module):
    def forward(self, w, scales, zero_points):
        q = qd.quantize_per_channel.default(w, scales, zero_points, 1, -128, 127, torch.int8)
        return q, qd.dequantize_per_channel.default(q, scales, zero_points, 1, -128, 127,
                                                    torch.int8)


def test_per_channel(compile_model):
    torch.manual_seed(0)
    args = (torch.randn(6, 5, 7), torch.rand(5) * 0.05 + 0.01, torch.randint(-3, 4, (5,)))
    ep, model = compile_model(PerChannel(), args)
    compare(model(*args), ep.module()(*args))


class DynamicQParams(torch.nn.Module):
    """The dynamic schemes: qparams chosen from the values, per tensor and per token."""

    def forward(self, x):
        scale, zp = qd.choose_qparams.tensor(x, -128, 127, 1e-5, torch.int8)
        q = qd.quantize_per_tensor.tensor(x, scale, zp, -128, 127, torch.int8)
        ts, tz = qd.choose_qparams_per_token_asymmetric.default(x, torch.int8)
        qt = qd.quantize_per_token.default(x, ts, tz, -128, 127, torch.int8)
        back = qd.dequantize_per_token.default(qt, ts, tz, -128, 127, torch.int8, torch.float32)
        return scale, zp, q, ts, tz, qt, back


def test_dynamic_qparams(compile_model):
    torch.manual_seed(0)
    x = torch.randn(4, 3, 32) * torch.linspace(0.1, 3, 32)
    ep, model = compile_model(DynamicQParams(), (x,))
    compare(model(x), ep.module()(x))


class Affine(torch.nn.Module):
    """torchao's primitives: asymmetric int4 in int8 by groups of 16, symmetric int8 rows."""

    def forward(self, x):
        from torchao.quantization.quant_primitives import (
            MappingType,
            choose_qparams_affine,
            dequantize_affine,
            quantize_affine,
        )

        s4, z4 = choose_qparams_affine(x, MappingType.ASYMMETRIC, (1, 16), torch.int8, -8, 7,
                                       1e-6, torch.float32, torch.int8)
        q4 = quantize_affine(x, (1, 16), s4, z4, torch.int8, -8, 7)
        s8, z8 = choose_qparams_affine(x, MappingType.SYMMETRIC, (1, 64), torch.int8, -128, 127,
                                       torch.finfo(torch.float32).eps, torch.float32, torch.int8)
        q8 = quantize_affine(x, (1, 64), s8, z8, torch.int8, -128, 127)
        return (s4, z4, q4, dequantize_affine(q4, (1, 16), s4, z4, torch.int8, -8, 7),
                s8, q8, dequantize_affine(q8, (1, 64), s8, z8, torch.int8, -128, 127))


def test_torchao_affine(compile_model):
    pytest.importorskip("torchao")
    torch.manual_seed(0)
    x = torch.randn(8, 64)
    ep, model = compile_model(Affine(), (x,))
    compare(model(x), ep.module()(x))


class IntMM(torch.nn.Module):
    def forward(self, a, b, u):
        return torch._int_mm(a, b), torch._int_mm(u, b.t().contiguous().t())


def test_int_mm_is_exact(compile_model):
    g = torch.Generator().manual_seed(0)
    # extreme values: sums of 8-bit products well past what float32 holds exactly
    a = torch.full((17, 256), -128, dtype=torch.int8)
    a[1:] = torch.randint(-128, 128, (16, 256), generator=g, dtype=torch.int8)
    b = torch.randint(-128, 128, (256, 24), generator=g, dtype=torch.int8)
    b[:, 0] = -128
    u = torch.randint(0, 256, (17, 256), generator=g, dtype=torch.uint8)
    ep, model = compile_model(IntMM(), (a, b, u))
    for got, want in zip(model(a, b, u), ep.module()(a, b, u)):
        assert got.dtype == want.dtype == torch.int32
        torch.testing.assert_close(got, want, rtol=0, atol=0)
