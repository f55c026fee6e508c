"""Transformer-shaped networks for the benchmarks: a BERT-base encoder layer, a LLaMA-style
decoder block and a small language model. Attention is written with matmul and softmax (as
eager model code often is), so every runtime receives the same graph."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

nn = torch.nn


def attention(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d) + mask) v on (batch, heads, seq, head_dim)."""
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is not None:
        scores = scores + mask
    return torch.softmax(scores, dim=-1) @ v


class BertLayer(nn.Module):
    """A BERT-base encoder layer (post-norm): self-attention with separate q/k/v projections,
    residual + LayerNorm, GELU MLP, residual + LayerNorm."""

    def __init__(self, dim: int = 768, heads: int = 12, hidden: int = 3072):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = (nn.Linear(dim, dim) for _ in range(3))
        self.out = nn.Linear(dim, dim)
        self.ln1 = nn.LayerNorm(dim, eps=1e-12)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.ln2 = nn.LayerNorm(dim, eps=1e-12)

    def split(self, t):
        b, s, d = t.shape
        return t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x):
        b, s, d = x.shape
        ctx = attention(self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x)))
        x = self.ln1(x + self.out(ctx.transpose(1, 2).reshape(b, s, d)))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaBlock(nn.Module):
    """A LLaMA-style decoder block: RMSNorm, rotary position embedding on q and k,
    grouped-query causal attention (kv_heads < heads), RMSNorm, SiLU-gated MLP."""

    def __init__(self, dim: int = 512, heads: int = 8, kv_heads: int = 2, hidden: int = 1408,
                 seq: int = 256):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, dim // heads
        self.norm1, self.norm2 = RMSNorm(dim), RMSNorm(dim)
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        angles = torch.outer(torch.arange(seq).float(), inv)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())
        self.register_buffer("mask", torch.full((seq, seq), float("-inf")).triu(1))

    def heads_of(self, t, n):
        b, s, _ = t.shape
        return t.reshape(b, s, n, self.hd).transpose(1, 2)

    def repeat_kv(self, t):
        b, n, s, hd = t.shape
        rep = self.heads // n
        return t[:, :, None].expand(b, n, rep, s, hd).reshape(b, n * rep, s, hd)

    def forward(self, x):
        b, s, d = x.shape
        h = self.norm1(x)
        q, k = self.heads_of(self.wq(h), self.heads), self.heads_of(self.wk(h), self.kv_heads)
        v = self.heads_of(self.wv(h), self.kv_heads)
        q = q * self.cos + rotate_half(q) * self.sin
        k = k * self.cos + rotate_half(k) * self.sin
        ctx = attention(q, self.repeat_kv(k), self.repeat_kv(v), self.mask)
        x = x + self.wo(ctx.transpose(1, 2).reshape(b, s, d))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class TinyLM(nn.Module):
    """A small language model: token embedding + learned positions, pre-norm causal encoder
    layers, final LayerNorm and a vocabulary head tied to the embedding."""

    def __init__(self, vocab: int = 5000, dim: int = 256, heads: int = 4, hidden: int = 1024,
                 layers: int = 2, seq: int = 128):
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(vocab, dim)
        nn.init.normal_(self.embed.weight, std=0.02)  # as LMs initialise it: logits of order 1
        self.pos = nn.Parameter(torch.randn(seq, dim) * 0.02)
        self.blocks = nn.ModuleList(
            nn.ModuleDict({"ln1": nn.LayerNorm(dim), "qkv": nn.Linear(dim, 3 * dim),
                           "proj": nn.Linear(dim, dim), "ln2": nn.LayerNorm(dim),
                           "fc1": nn.Linear(dim, hidden), "fc2": nn.Linear(hidden, dim)})
            for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.register_buffer("mask", torch.full((seq, seq), float("-inf")).triu(1))

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos
        b, s, d = x.shape
        for blk in self.blocks:
            q, k, v = (t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
                       for t in blk["qkv"](blk["ln1"](x)).split(d, dim=-1))
            ctx = attention(q, k, v, self.mask)
            x = x + blk["proj"](ctx.transpose(1, 2).reshape(b, s, d))
            x = x + blk["fc2"](F.gelu(blk["fc1"](blk["ln2"](x))))
        return self.norm(x) @ self.embed.weight.t()
