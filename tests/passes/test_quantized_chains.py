"""passes/quantized.py: which PT2E products become integer products, on the graphs the
quantizers write and on hand-made variants it must leave to the ordinary lowerings."""
from __future__ import annotations

import pytest
import torch

from aotc.errors import CompileError
from aotc.options import Options
from aotc.passes.chains import find_chains
from aotc.passes.quantized import find_quantized, format_quantized

pytest.importorskip("torchao")
from quantized_models import (  # noqa: E402
    MLP,
    conv_net_int8,
    pooled_conv_net_int8,
    pt2e_static_int8,
)

qd = torch.ops.quantized_decomposed


def test_conv_net_products():
    ep, _ = conv_net_int8()
    text = format_quantized(find_quantized(ep))
    assert text.count("conv2d(") == 3
    # the 3x3 convolutions keep their padding, the 1x1 head has none; uint8 activations
    assert "conv2d((1, 1), (1, 1), (1, 1))(quantize_per_tensor (s " in text
    assert "conv2d((1, 1), (0, 0), (1, 1))" in text


@pytest.mark.parametrize("quantizer", ["x86", "xnnpack"])
def test_max_pool_of_quantized_values(quantizer):
    """quantize(max_pool2d(dequantize(x_q))) with one scale and zero point pools x_q."""
    ep, _ = pooled_conv_net_int8(quantizer)
    lines = format_quantized(find_quantized(ep)).splitlines()
    assert sum(" = max_pool2d(" in ln for ln in lines) == 1
    assert sum(" = conv2d(" in ln for ln in lines) == 2


def test_max_pool_between_different_qparams_stays_float():
    """A pool whose quantize has another scale than its input is no max of the values."""

    class Pool(torch.nn.Module):
        def forward(self, x_q):
            x = qd.dequantize_per_tensor(x_q, 0.1, 3, 0, 255, torch.uint8)
            y = torch.nn.functional.max_pool2d(x, 2)
            return qd.quantize_per_tensor(y, 0.2, 3, 0, 255, torch.uint8)

    x_q = torch.randint(0, 256, (1, 2, 6, 6), dtype=torch.uint8)
    assert not find_quantized(torch.export.export(Pool(), (x_q,)))


def test_linear_products_name_their_weights():
    torch.manual_seed(0)
    x = torch.randn(4, 64)
    ep = pt2e_static_int8(MLP(), x, [x])
    lines = format_quantized(find_quantized(ep)).splitlines()
    assert len(lines) == 2
    assert all(" (s b__scale_" in ln and ln.endswith("_bias") for ln in lines)


def test_only_with_integer_products():
    ep, _ = conv_net_int8()
    assert not find_chains(ep, integer_products=False)
    assert len(find_chains(ep, integer_products=True)) == 3


class Hand(torch.nn.Module):
    """A hand-written quantized linear: weight zero points and groups as the test asks."""

    def __init__(self, zero: int = 0, readers: int = 1):
        super().__init__()
        self.register_buffer("w", torch.randint(-127, 128, (16, 32), dtype=torch.int8))
        self.register_buffer("s", torch.rand(16) * 0.01 + 0.001)
        self.register_buffer("z", torch.full((16,), zero, dtype=torch.int64))
        self.readers = readers

    def forward(self, x):
        q = qd.quantize_per_tensor(x, 0.05, 3, 0, 255, torch.uint8)
        a = qd.dequantize_per_tensor(q, 0.05, 3, 0, 255, torch.uint8)
        w = qd.dequantize_per_channel(self.w, self.s, self.z, 0, -128, 127, torch.int8)
        y = torch.nn.functional.linear(a, w)
        return y + a.sum() if self.readers > 1 else y


@pytest.mark.parametrize("zero,readers,found", [(0, 1, 1), (2, 1, 0), (0, 2, 0)])
def test_hand_written_products(zero, readers, found):
    """Symmetric weights match; a weight zero point other than 0, or a dequantized
    activation something else reads too, leave the linear to the float lowerings."""
    import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers the ops)

    ep = torch.export.export(Hand(zero, readers), (torch.randn(4, 32),))
    assert len(find_quantized(ep)) == found


def test_int8_kernels_option():
    assert Options.parse({"int8_kernels": "on"}).int8_kernels == "on"
    with pytest.raises(CompileError, match="int8_kernels must be one of"):
        Options.parse({"int8_kernels": "yes"})
