"""Transformer blocks compile their attention into the one Attention template (checked in
the generated C++), and match eager: an encoder whose attention is written with matmul and
softmax (dynamic batch and sequence), and a LLaMA-style block with grouped-query heads
repeated by expand + reshape and a causal scaled_dot_product_attention."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from models import EncoderBlock


class RMSNorm(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim) + 0.1 * torch.randn(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class LlamaBlock(nn.Module):
    def __init__(self, dim=128, heads=8, kv_heads=2, hidden=256):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.norm1, self.norm2 = RMSNorm(dim), RMSNorm(dim)
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def repeat_kv(self, x):
        b, h, s, d = x.shape
        rep = self.heads // h
        return x[:, :, None].expand(b, h, rep, s, d).reshape(b, h * rep, s, d)

    def forward(self, x):
        b, s, d = x.shape
        h = self.norm1(x)
        q = self.wq(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, self.repeat_kv(k), self.repeat_kv(v),
                                           is_causal=True)
        x = x + self.wo(a.transpose(1, 2).reshape(b, s, d))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def _generated(tmp_path) -> str:
    return (tmp_path / "dbg" / "model" / "07_codegen.cpp").read_text()


def test_encoder_attention_is_one_kernel(compile_model, tmp_path):
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=4)
    seq = torch.export.Dim("seq", min=1, max=256)
    ep, model = compile_model(EncoderBlock(), (torch.randn(2, 70, 32),),
                              dynamic_shapes={"x": {0: batch, 1: seq}},
                              options={"debug_dir": tmp_path / "dbg"})
    for shape in ((2, 70, 32), (1, 1, 32), (3, 200, 32)):
        x = torch.randn(shape)
        torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)
    source = _generated(tmp_path)
    assert source.count("aotc_attention_f32(") == 1
    ir = (tmp_path / "dbg" / "model" / "01_dce.txt").read_text()
    assert "max over" not in ir  # no softmax row max is left: the scores never exist


def test_llama_block_reads_grouped_heads_in_place(compile_model, tmp_path):
    torch.manual_seed(0)
    seq = torch.export.Dim("seq", min=2, max=512)
    ep, model = compile_model(LlamaBlock(), (torch.randn(1, 100, 128),),
                              dynamic_shapes={"x": {1: seq}},
                              options={"debug_dir": tmp_path / "dbg"})
    for n in (100, 257):
        x = torch.randn(1, n, 128)
        torch.testing.assert_close(model(x), ep.module()(x), rtol=1e-4, atol=1e-4)
    source = _generated(tmp_path)
    assert source.count("aotc_attention_f32(") == 1
    ir = (tmp_path / "dbg" / "model" / "02_fuse.txt").read_text()
    line = next(ln for ln in ir.splitlines() if "attention[" in ln)
    assert "causal" in line and "group=4" in line, line


class LlamaAttention(nn.Module):
    """The original LLaMA code: scores / sqrt(d) + mask, softmax of scores.float() cast back."""

    def forward(self, q, k, v, mask):
        scores = torch.matmul(q, k.transpose(2, 3)) / 8.0 + mask
        scores = F.softmax(scores.float(), dim=-1).type_as(q)
        return torch.matmul(scores, v)


def test_half_llama_attention_with_float_softmax(compile_model, tmp_path):
    torch.manual_seed(0)
    n = 70
    mask = torch.full((n, n), float("-inf")).triu(1)[None, None].half()
    args = [torch.randn(1, 4, n, 64, dtype=torch.float16) for _ in range(3)] + [mask]
    ep, model = compile_model(LlamaAttention(), args, options={"debug_dir": tmp_path / "dbg"})
    torch.testing.assert_close(model(*args), ep.module()(*args), rtol=1e-2, atol=1e-2)
    assert _generated(tmp_path).count("aotc_attention_f32(") == 1
