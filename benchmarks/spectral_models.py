"""Two models of the complex / FFT kind, for benchmarks/spectral.py (and its tests):

- `LogMel`: Whisper's log-mel front end, as openai/whisper's `log_mel_spectrogram` writes it:
  `stft` over a `hann_window` (center, reflect padding, complex result), the power of each
  bin but the last frame, a mel filter bank (a constant matrix), `log10` of the clamped
  energies, floored 8 below their maximum and scaled.
- `RotaryBlock`: a LLaMA block as Meta's reference model writes it: RMSNorm, attention whose
  rotary embedding multiplies `view_as_complex` pairs by `torch.polar` frequencies, and a
  SwiGLU MLP, with residuals.

The mel filter bank is built here (triangular filters evenly spaced on the HTK mel scale) so
that nothing is downloaded.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def mel_filters(sample_rate: int, n_fft: int, n_mels: int) -> np.ndarray:
    """[n_mels, n_fft // 2 + 1] triangular filters on the HTK mel scale, float32."""
    def to_mel(hz):
        return 2595.0 * np.log10(1.0 + hz / 700.0)

    def to_hz(mel):
        return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)

    freqs = np.linspace(0.0, sample_rate / 2, n_fft // 2 + 1)
    edges = to_hz(np.linspace(to_mel(0.0), to_mel(sample_rate / 2), n_mels + 2))
    bank = np.zeros((n_mels, freqs.size), np.float32)
    for i in range(n_mels):
        lo, mid, hi = edges[i:i + 3]
        rising, falling = (freqs - lo) / (mid - lo), (hi - freqs) / (hi - mid)
        bank[i] = np.maximum(0.0, np.minimum(rising, falling))
    return bank


class LogMel(nn.Module):
    """audio [batch, samples] -> log-mel [batch, n_mels, frames] (Whisper's)."""

    def __init__(self, n_fft: int = 400, hop: int = 160, n_mels: int = 80,
                 sample_rate: int = 16000):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("mel", torch.from_numpy(mel_filters(sample_rate, n_fft, n_mels)))

    def forward(self, audio):
        window = torch.hann_window(self.n_fft)
        spectrum = torch.stft(audio, self.n_fft, self.hop, window=window, return_complex=True)
        power = spectrum[..., :-1].abs() ** 2
        energies = self.mel @ power
        log_spec = torch.clamp(energies, min=1e-10).log10()
        log_spec = torch.maximum(log_spec, log_spec.amax(dim=(-2, -1), keepdim=True) - 8.0)
        return (log_spec + 4.0) / 4.0


def rotary_frequencies(head_dim: int, positions: int, theta: float = 10000.0):
    """Meta's precompute_freqs_cis: complex exp(i * position * frequency)."""
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    angles = torch.outer(torch.arange(positions).float(), freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary(x, freqs):
    """x [batch, seq, heads, head_dim] rotated pairwise by freqs [seq, head_dim / 2]."""
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    rotated = torch.view_as_real(pairs * freqs.view(1, x.shape[1], 1, -1)).flatten(3)
    return rotated.type_as(x)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class RotaryBlock(nn.Module):
    """x [batch, seq, dim] -> the same: causal attention with complex rotary embeddings
    (grouped keys and values), then a SwiGLU MLP, each after an RMSNorm, with residuals."""

    def __init__(self, dim: int = 768, heads: int = 12, kv_heads: int = 4, hidden: int = 2048,
                 max_seq: int = 512):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.wq = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(heads * self.head_dim, dim, bias=False)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.attention_norm, self.ffn_norm = RMSNorm(dim), RMSNorm(dim)
        self.register_buffer("freqs", rotary_frequencies(self.head_dim, max_seq))

    def attention(self, x):
        batch, seq, _ = x.shape
        q = self.wq(x).view(batch, seq, self.heads, self.head_dim)
        k = self.wk(x).view(batch, seq, self.kv_heads, self.head_dim)
        v = self.wv(x).view(batch, seq, self.kv_heads, self.head_dim)
        freqs = self.freqs[:seq]
        q, k = apply_rotary(q, freqs), apply_rotary(k, freqs)
        rep = self.heads // self.kv_heads
        k = k.repeat_interleave(rep, dim=2).transpose(1, 2)
        v = v.repeat_interleave(rep, dim=2).transpose(1, 2)
        scores = q.transpose(1, 2) @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        mask = torch.full((seq, seq), float("-inf")).triu(1)
        weights = torch.softmax(scores + mask, dim=-1)
        return self.wo((weights @ v).transpose(1, 2).reshape(batch, seq, -1))

    def forward(self, x):
        h = x + self.attention(self.attention_norm(x))
        y = self.ffn_norm(h)
        return h + self.w2(F.silu(self.w1(y)) * self.w3(y))
