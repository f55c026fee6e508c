"""Quantized models shared by the tests: small networks, PT2E static int8 through
X86InductorQuantizer or XNNPACKQuantizer, and the tolerance quantized outputs are held to."""
from __future__ import annotations

import warnings

import pytest
import torch


def assert_close_to_largest(got: torch.Tensor, want: torch.Tensor) -> None:
    """Float outputs within 1% of the largest magnitude expected: a value on a rounding
    boundary of a quantize step may land one quantum off, as float sums differ in order."""
    atol = 0.01 * float(want.detach().abs().max())
    torch.testing.assert_close(got, want, atol=atol, rtol=0)


class ConvNet(torch.nn.Module):
    """conv + batchnorm + relu, then a residual block whose add reads the quantized input.
    The 3-channel stem's patches are gathered channels first, the 16-channel convolutions'
    tap-major from a channels-last copy (lowering/quantize.py: _taps_major)."""

    def __init__(self, width: int = 16):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, width, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(width)
        self.conv2 = torch.nn.Conv2d(width, width, 3, padding=1)
        self.head = torch.nn.Conv2d(width, 4, 1)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv1(x)))
        return self.head(torch.relu(self.conv2(y) + y))


class PooledConvNet(torch.nn.Module):
    """A ResNet-style stem: conv + batch norm + ReLU, a 3x3 stride-2 max pool, then a conv
    (the quantizers keep the pool's scale and zero point: it pools the 8-bit values)."""

    def __init__(self, width: int = 16):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, width, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(width)
        self.relu = torch.nn.ReLU()  # as a module: X86InductorQuantizer then quantizes
        self.pool = torch.nn.MaxPool2d(3, 2, 1)  # the pool's input too
        self.conv = torch.nn.Conv2d(width, 8, 3, padding=1)

    def forward(self, x):
        return self.conv(self.pool(self.relu(self.bn(self.stem(x)))))


def pooled_conv_net_int8(quantizer: str = "x86"):
    torch.manual_seed(1)
    batches = [torch.randn(2, 3, 15, 13) for _ in range(3)]
    return pt2e_static_int8(PooledConvNet().eval(), batches[0], batches[:2], quantizer), batches


class DownsampledBlock(torch.nn.Module):
    """A ResNet block that halves the resolution: its 3x3 stride-2 convolution plus a 1x1
    stride-2 downsample of the block's input, added, then ReLU and a 1x1 head. The quantizers
    requantize the downsample's result before the add (its own 8-bit activation)."""

    def __init__(self, width: int = 16):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, width, 3, padding=1)
        self.conv = torch.nn.Conv2d(width, 2 * width, 3, stride=2, padding=1)
        self.down = torch.nn.Conv2d(width, 2 * width, 1, stride=2)
        self.head = torch.nn.Conv2d(2 * width, 4, 1)

    def forward(self, x):
        y = torch.relu(self.stem(x))
        return self.head(torch.relu(self.conv(y) + self.down(y)))


def downsampled_block_int8(quantizer: str = "x86"):
    torch.manual_seed(2)
    batches = [torch.randn(2, 3, 12, 10) for _ in range(3)]
    return pt2e_static_int8(DownsampledBlock().eval(), batches[0], batches[:2], quantizer), \
        batches


class PooledHead(torch.nn.Module):
    """Two convolutions, then a classifier's head: global average pool, flatten, linear."""

    def __init__(self, width: int = 16):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, width, 3, padding=1)
        self.conv = torch.nn.Conv2d(width, 2 * width, 3, padding=1)
        self.fc = torch.nn.Linear(2 * width, 5)

    def forward(self, x):
        y = torch.relu(self.conv(torch.relu(self.stem(x))))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))


def pooled_head_int8(quantizer: str = "x86"):
    torch.manual_seed(3)
    batches = [torch.randn(2, 3, 9, 11) for _ in range(3)]
    return pt2e_static_int8(PooledHead().eval(), batches[0], batches[:2], quantizer), batches


class EncoderLayer(torch.nn.Module):
    """One attention head through explicit matmuls and softmax, then a ReLU MLP."""

    def __init__(self, dim=32, hidden=64):
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(dim, dim) for _ in range(3))
        self.out = torch.nn.Linear(dim, dim)
        self.up, self.down = torch.nn.Linear(dim, hidden), torch.nn.Linear(hidden, dim)
        self.scale = dim ** -0.5

    def forward(self, x):
        att = torch.softmax(self.q(x) @ self.k(x).transpose(-1, -2) * self.scale, dim=-1)
        h = x + self.out(att @ self.v(x))
        return h + self.down(torch.relu(self.up(h)))


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(64, 128), torch.nn.Linear(128, 32)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def quantizer_of(name: str):
    """X86InductorQuantizer's default static int8 scheme (uint8 activations; "x86") or its
    dynamic one ("x86_dynamic": activations' qparams chosen at run time), or ExecuTorch's
    XNNPACKQuantizer's symmetric per-channel one (int8 activations; "xnnpack")."""
    if name == "xnnpack":
        xnn = pytest.importorskip("executorch.backends.xnnpack.quantizer.xnnpack_quantizer")
        quantizer = xnn.XNNPACKQuantizer()
        quantizer.set_global(xnn.get_symmetric_quantization_config(is_per_channel=True))
        return quantizer
    from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as xiq

    quantizer = xiq.X86InductorQuantizer()
    quantizer.set_global(xiq.get_default_x86_inductor_quantization_config(
        is_dynamic=name == "x86_dynamic"))
    return quantizer


def pt2e_static_int8(module: torch.nn.Module, example: torch.Tensor,
                     calibration: list[torch.Tensor],
                     quantizer: str = "x86") -> torch.export.ExportedProgram:
    """A PT2E int8 scheme (quantizer_of), calibrated, exported again."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    quantizer = quantizer_of(quantizer)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepared = prepare_pt2e(torch.export.export(module.eval(), (example,)).module(),
                                quantizer)
        for batch in calibration:
            prepared(batch)
        return torch.export.export(convert_pt2e(prepared), (example,))


def conv_net_int8(quantizer: str = "x86"):
    torch.manual_seed(0)
    batches = [torch.randn(2, 3, 12, 12) for _ in range(3)]
    model = ConvNet()
    with torch.no_grad():  # batchnorm statistics of their own, not the identity
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 2.0)
    return pt2e_static_int8(model, batches[0], batches[:2], quantizer), batches


class DecoderLayer(torch.nn.Module):
    """A LLaMA-style decoder layer: RMSNorm, causal attention with two KV heads for four
    query heads, SwiGLU MLP, residuals; every projection a Linear without bias."""

    def __init__(self, dim: int = 64, heads: int = 4, kv_heads: int = 2, hidden: int = 128):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q = torch.nn.Linear(dim, dim, bias=False)
        self.k = torch.nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v = torch.nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o = torch.nn.Linear(dim, dim, bias=False)
        self.gate = torch.nn.Linear(dim, hidden, bias=False)
        self.up = torch.nn.Linear(dim, hidden, bias=False)
        self.down = torch.nn.Linear(hidden, dim, bias=False)
        self.norm1 = torch.nn.RMSNorm(dim, eps=1e-6)
        self.norm2 = torch.nn.RMSNorm(dim, eps=1e-6)

    def forward(self, x):
        b, t, d = x.shape
        h = self.norm1(x)
        q = self.q(h).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        att = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                               enable_gqa=True)
        x = x + self.o(att.transpose(1, 2).reshape(b, t, d))
        h = self.norm2(x)
        return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))
