"""float16 and bfloat16 programs: stored as half, computed in float32 and rounded once per
op as PyTorch does on CPU; compared with eager at assert_close's half tolerances."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import aotc
from models import EncoderBlock, GeluMLP

HALF = [torch.float16, torch.bfloat16]


class RMSNorm(torch.nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim) + 0.1 * torch.randn(dim))

    def forward(self, x):
        h = x.float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * self.weight


class LlamaBlock(torch.nn.Module):
    """RMSNorm, rotary embedding, grouped-query attention and a SiLU-gated MLP."""

    def __init__(self, dim=64, heads=4, kv_heads=2, hidden=128):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.norm1, self.norm2 = RMSNorm(dim), RMSNorm(dim)
        self.q = torch.nn.Linear(dim, dim, bias=False)
        self.kv = torch.nn.Linear(dim, 2 * kv_heads * self.head_dim, bias=False)
        self.o = torch.nn.Linear(dim, dim, bias=False)
        self.gate = torch.nn.Linear(dim, hidden, bias=False)
        self.up = torch.nn.Linear(dim, hidden, bias=False)
        self.down = torch.nn.Linear(hidden, dim, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        self.register_buffer("inv_freq", inv)

    def rotate(self, x, cos, sin):
        x1, x2 = x[..., : self.head_dim // 2], x[..., self.head_dim // 2:]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    def forward(self, x):
        b, s, d = x.shape
        h = self.norm1(x)
        q = self.q(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(h).view(b, s, 2, self.kv_heads, self.head_dim).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        t = torch.arange(s, dtype=torch.float32)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat([freqs, freqs], -1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        q, k = self.rotate(q, cos, sin), self.rotate(k, cos, sin)
        rep = self.heads // self.kv_heads
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, d))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = F.relu(self.bn(self.conv(x)))
        return self.fc(F.adaptive_avg_pool2d(y, 1).flatten(1))


# whole models in half precision: eager's own rounding differs from any other summation
# order by an ulp here and there, which the next layers carry on
MODEL_TOL = {torch.float16: 1e-2, torch.bfloat16: 5e-2}


def _check(compile_model, module, args, dynamic_shapes=None):
    """Close to eager at half tolerances, and no further from the float32 model than eager
    itself is (twice eager's error at most)."""
    ep, model = compile_model(module, args, dynamic_shapes)
    compare(ep, model, module, args)
    return ep, model


def compare(ep, model, module, args):
    dtype = args[0].dtype
    with torch.no_grad():
        expected = ep.module()(*args)
        reference = module.float()(*(a.float() for a in args))
        module.to(dtype)
    ours = model(*args)
    tol = MODEL_TOL[dtype]
    torch.testing.assert_close(ours, expected, rtol=tol, atol=tol)
    eager_err = (expected.float() - reference).abs().max().item()
    ours_err = (ours.float() - reference).abs().max().item()
    assert ours_err <= 2 * eager_err + 1e-3, (ours_err, eager_err)


@pytest.mark.parametrize("dtype", HALF)
def test_gelu_mlp(compile_model, dtype):
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=64)
    mlp = GeluMLP().to(dtype)
    ep, model = _check(compile_model, mlp, (torch.randn(8, 32, dtype=dtype),), {"x": {0: batch}})
    compare(ep, model, mlp, (torch.randn(3, 32, dtype=dtype),))


@pytest.mark.parametrize("dtype", HALF)
def test_encoder_block(compile_model, dtype):
    torch.manual_seed(0)
    _check(compile_model, EncoderBlock().to(dtype), (torch.randn(2, 10, 32, dtype=dtype),))


def test_llama_block_with_bfloat16_weights(compile_model):
    torch.manual_seed(0)
    seq = torch.export.Dim("seq", min=2, max=64)
    block = LlamaBlock().to(torch.bfloat16)
    x = torch.randn(1, 12, 64, dtype=torch.bfloat16)
    ep, model = _check(compile_model, block, (x,), {"x": {1: seq}})
    compare(ep, model, block, (torch.randn(1, 5, 64, dtype=torch.bfloat16),))


@pytest.mark.parametrize("dtype", HALF)
def test_conv_net(compile_model, dtype):
    torch.manual_seed(0)
    _check(compile_model, SmallCNN().eval().to(dtype), (torch.randn(2, 3, 10, 10, dtype=dtype),))


class Casts(torch.nn.Module):
    def forward(self, x, y):
        h = x.to(torch.float16) * 3.1
        b = x.to(torch.bfloat16) + 1e-3
        return h, b, h.float() + b.float(), (y.half() > 0.5), y.to(torch.bfloat16).argmax(-1)


def test_casts_round_like_eager(compile_model):
    torch.manual_seed(0)
    x = torch.randn(4, 64) * 1000
    y = torch.rand(4, 64)
    ep, model = compile_model(Casts(), (x, y))
    for a, b in zip(model(x, y), ep.module()(x, y)):
        assert a.dtype == b.dtype
        torch.testing.assert_close(a, b, rtol=0, atol=0)  # one rounding each: bit-exact


def test_numpy_in_numpy_out_float16(compile_model):
    x = torch.randn(3, 32, dtype=torch.float16)
    ep, model = compile_model(GeluMLP().to(torch.float16), (x,))
    out = model(x.numpy())
    assert isinstance(out, np.ndarray) and out.dtype == np.float16
    torch.testing.assert_close(torch.from_numpy(out), ep.module()(x))


def _bf16_bits(t: torch.Tensor) -> np.ndarray:
    return t.contiguous().view(torch.int16).numpy().view(np.uint16)


def test_numpy_bfloat16_is_uint16_both_ways(compile_model):
    """numpy has no bfloat16: outputs come back as uint16 bits, and uint16 bits are taken
    for a bfloat16 input, so an output feeds the next call; uint16 elsewhere is refused."""
    torch.manual_seed(0)
    x = torch.randn(3, 32, dtype=torch.bfloat16)
    ep, model = compile_model(GeluMLP((32, 64, 32)).to(torch.bfloat16), (x,))
    out = model(_bf16_bits(x))
    assert isinstance(out, np.ndarray) and out.dtype == np.uint16
    expected = ep.module()(x)
    got = torch.from_numpy(out.view(np.int16).copy()).view(torch.bfloat16)
    torch.testing.assert_close(got, expected)
    again = model(out)  # its own output taken back as bfloat16
    assert again.dtype == np.uint16
    torch.testing.assert_close(torch.from_numpy(again.view(np.int16).copy()).view(torch.bfloat16),
                               ep.module()(got))
    torch.testing.assert_close(model(x), expected)  # torch inputs unaffected
    with pytest.raises(aotc.InputError, match="expected dtype bfloat16, got float16"):
        model(np.zeros((3, 32), np.float16))


def test_numpy_uint16_for_a_float_input_is_refused(compile_model):
    ep, model = compile_model(GeluMLP(), (torch.randn(3, 32),))
    with pytest.raises(aotc.InputError, match="uint16 array stands for bfloat16.*is float32"):
        model(np.zeros((3, 32), np.uint16))
