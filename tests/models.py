"""Models shared by the tests (and the benchmarks): small, real architectures."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from model import Model as ReadmeModel  # examples/model.py: the README's example itself

__all__ = ["ReadmeModel", "GeluMLP", "EncoderBlock", "ScaledLinear", "TiedLM", "ConvBN", "layer_norm",
           "Fn"]


class Fn(torch.nn.Module):
    """A function as a module, to export a few ops without writing a class."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


class SDPA(torch.nn.Module):
    """scaled_dot_product_attention with the keyword arguments it was built with; a mask,
    if any, comes after q, k and v."""

    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, q, k, v, *mask):
        return F.scaled_dot_product_attention(q, k, v, *mask, **self.kwargs)


class GeluMLP(torch.nn.Module):
    def __init__(self, sizes=(32, 64, 64, 8), approximate="none"):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.approximate = approximate

    def forward(self, x):
        for k, layer in enumerate(self.layers):
            x = layer(x)
            if k < len(self.layers) - 1:
                x = F.gelu(x, approximate=self.approximate)
        return x


def layer_norm(x, weight, bias, eps=1e-5):
    """Layer norm from primitives (mean, var, rsqrt)."""
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) * torch.rsqrt(var + eps) * weight + bias


class EncoderBlock(torch.nn.Module):
    """A pre-norm transformer encoder block written from primitives."""

    def __init__(self, dim=32, heads=4, hidden=64):
        super().__init__()
        self.heads = heads
        self.ln1_w = torch.nn.Parameter(torch.rand(dim) + 0.5)
        self.ln1_b = torch.nn.Parameter(torch.randn(dim) * 0.1)
        self.ln2_w = torch.nn.Parameter(torch.rand(dim) + 0.5)
        self.ln2_b = torch.nn.Parameter(torch.randn(dim) * 0.1)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.fc1 = torch.nn.Linear(dim, hidden)
        self.fc2 = torch.nn.Linear(hidden, dim)

    def forward(self, x):
        b, s, d = x.shape
        h = layer_norm(x, self.ln1_w, self.ln1_b)
        q, k, v = self.qkv(h).split(d, dim=-1)
        q = q.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
        k = k.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
        v = v.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        h = layer_norm(x, self.ln2_w, self.ln2_b)
        return x + self.fc2(F.gelu(self.fc1(h)))


class ScaledLinear(torch.nn.Module):
    """A weight used only through a subgraph of weights (w * scale): what freezing folds."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(16, 8))
        self.register_buffer("scale", torch.rand(16, 1) + 0.5)
        self.b = torch.nn.Parameter(torch.randn(16))

    def forward(self, x):
        return torch.nn.functional.linear(x, self.w * self.scale, self.b)


class TiedLM(torch.nn.Module):
    """A language model's shape in small: the head is the embedding's parameter (tied)."""

    def __init__(self, vocab: int = 300, dim: int = 48):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.mix = torch.nn.Linear(dim, dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens):
        return self.head(torch.tanh(self.mix(self.embed(tokens))))


class ConvBN(torch.nn.Module):
    """A convolution and the batch norm after it, which lowering folds into its weights."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.bn = torch.nn.BatchNorm2d(8)
        with torch.no_grad():
            self.bn.running_mean.normal_()
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class TinyLM(torch.nn.Module):
    """A decoder LM in miniature, with transformers' export signature: token embeddings
    written into a cache held as state at `cache_position`, each position's logits from its
    embedding and the mean of the cache so far."""

    def __init__(self, vocab=32, dim=8, max_len=16):
        super().__init__()
        self.max_len = max_len
        self.emb = torch.nn.Embedding(vocab, dim)
        self.head = torch.nn.Linear(dim, vocab)
        self.register_buffer("cache", torch.zeros(max_len, dim))

    def forward(self, input_ids, cache_position):
        x = self.emb(input_ids[0])
        self.cache.index_copy_(0, cache_position, x)
        seen = (torch.arange(self.max_len) <= cache_position[-1]).float()
        context = (self.cache * seen[:, None]).sum(0) / seen.sum()
        return self.head(x + context)[None]


def export_tiny_lm(max_len: int = 16) -> torch.export.ExportedProgram:
    """TinyLM exported as transformers' path exports a decoder LM: by keyword, with a
    dynamic sequence length."""
    torch.manual_seed(0)
    seq = torch.export.Dim("seq", min=1, max=max_len)
    with torch.no_grad():
        return torch.export.export(TinyLM(max_len=max_len).eval(), (),
                                   {"input_ids": torch.tensor([[1, 2, 3]]),
                                    "cache_position": torch.arange(3)},
                                   dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq}})
