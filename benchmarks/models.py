"""The benchmark suite: float32 networks shaped like real models (MLPs, transformer layers
from transformer_models.py, CNNs from cnn_models.py and cnn_zoo.py at 224 x 224). Component
benchmarks and single CNN blocks are listed apart and run by name.

Each entry of SUITE is a Benchmark: a name, a constructor for the nn.Module, and a function
returning the example inputs. Weights and inputs come from fixed seeds, so every process that
builds an entry (the compiling parent and the timing workers) gets identical tensors.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from cnn_models import BasicBlock, InvertedResidual, MobileNetV2, ResNet18
from cnn_zoo import DenseNet121, EfficientNetB0, MobileNetV3
from transformer_models import BertLayer, LlamaBlock, TinyLM


class ReadmeModel(torch.nn.Module):
    """The README's example: Linear(10, 16) -> ReLU -> Linear(16, 1) -> Sigmoid."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(10, 16)
        self.fc2 = torch.nn.Linear(16, 1)

    def forward(self, x):
        return torch.sigmoid(self.fc2(torch.relu(self.fc1(x))))


class GeluMLP(torch.nn.Module):
    """A stack of Linear layers with GELU (erf) between them."""

    def __init__(self, sizes=(256, 1024, 1024, 256)):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, x):
        for k, layer in enumerate(self.layers):
            x = layer(x)
            if k < len(self.layers) - 1:
                x = F.gelu(x)
        return x


def primitive_layer_norm(x, weight, bias, eps=1e-5):
    """Layer norm written from primitives (mean, var, rsqrt), as some model code does."""
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) * torch.rsqrt(var + eps) * weight + bias


class LayerNorm(torch.nn.Module):
    """LayerNorm with either aten.layer_norm or the primitive formulation."""

    def __init__(self, dim, primitive=False):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.rand(dim) + 0.5)
        self.bias = torch.nn.Parameter(torch.randn(dim) * 0.1)
        self.primitive = primitive

    def forward(self, x):
        if self.primitive:
            return primitive_layer_norm(x, self.weight, self.bias)
        return F.layer_norm(x, x.shape[-1:], self.weight, self.bias)


class EncoderBlock(torch.nn.Module):
    """A pre-norm transformer encoder block; attention is written with matmul and softmax."""

    def __init__(self, dim=256, heads=4, hidden=1024, primitive_ln=False):
        super().__init__()
        self.heads = heads
        self.ln1 = LayerNorm(dim, primitive_ln)
        self.ln2 = LayerNorm(dim, primitive_ln)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.fc1 = torch.nn.Linear(dim, hidden)
        self.fc2 = torch.nn.Linear(hidden, dim)

    def attention(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        q, k, v = (t.reshape(b, s, self.heads, hd).transpose(1, 2)
                   for t in self.qkv(x).split(d, dim=-1))
        att = torch.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd)), dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, s, d))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class SmallTransformer(torch.nn.Module):
    """Embedding-free transformer trunk: N encoder blocks, a final norm and a linear head."""

    def __init__(self, blocks=2, dim=256, heads=4, hidden=1024, out=64, primitive_ln=True):
        super().__init__()
        self.blocks = torch.nn.ModuleList(
            EncoderBlock(dim, heads, hidden, primitive_ln) for _ in range(blocks))
        self.norm = LayerNorm(dim, primitive_ln)
        self.head = torch.nn.Linear(dim, out)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


class Attention(torch.nn.Module):
    """softmax(q k^T / sqrt(d)) v on (batch, heads, seq, head_dim) inputs."""

    def forward(self, q, k, v):
        att = torch.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1])), dim=-1)
        return att @ v


class Apply(torch.nn.Module):
    """A module around one function of the input (for single-operator components)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


@dataclass(frozen=True)
class Benchmark:
    name: str
    make_model: Callable[[], torch.nn.Module]
    make_inputs: Callable[[], tuple]
    description: str

    def build(self) -> tuple[torch.nn.Module, tuple]:
        """The model (eval mode) and its example inputs, from fixed seeds."""
        torch.manual_seed(0)
        model = self.make_model().eval()
        torch.manual_seed(1)
        return model, self.make_inputs()


SUITE = [
    Benchmark("readme_b8", ReadmeModel, lambda: (torch.randn(8, 10),),
              "README model (Linear 10->16, ReLU, Linear 16->1, Sigmoid), batch 8"),
    Benchmark("readme_b256", ReadmeModel, lambda: (torch.randn(256, 10),),
              "README model, batch 256"),
    Benchmark("mlp_gelu_b64", GeluMLP, lambda: (torch.randn(64, 256),),
              "GELU MLP 256->1024->1024->256, batch 64"),
    Benchmark("encoder_s128", EncoderBlock, lambda: (torch.randn(1, 128, 256),),
              "encoder block (dim 256, 4 heads, MLP 1024, aten.layer_norm), 1 x 128 tokens"),
    Benchmark("transformer2_s128", SmallTransformer, lambda: (torch.randn(1, 128, 256),),
              "2 encoder blocks + norm + head 256->64 (primitive layer norm), 1 x 128 tokens"),
    Benchmark("mlp4096_b64", lambda: GeluMLP((1024, 4096, 4096, 1024)),
              lambda: (torch.randn(64, 1024),), "GELU MLP 1024->4096->4096->1024, batch 64"),
    Benchmark("resnet18_224", ResNet18, lambda: (torch.randn(1, 3, 224, 224),),
              "ResNet-18-shaped network, 1 x 3 x 224 x 224"),
    Benchmark("mobilenetv2_224", MobileNetV2, lambda: (torch.randn(1, 3, 224, 224),),
              "MobileNetV2-shaped network (depthwise convs), 1 x 3 x 224 x 224"),
    Benchmark("mobilenetv3_224", MobileNetV3, lambda: (torch.randn(1, 3, 224, 224),),
              "MobileNetV3-Large-shaped network (squeeze-excitation, hardswish), "
              "1 x 3 x 224 x 224"),
    Benchmark("efficientnet_b0_224", EfficientNetB0, lambda: (torch.randn(1, 3, 224, 224),),
              "EfficientNet-B0-shaped network (MBConv + squeeze-excitation, SiLU, 5x5 "
              "depthwise), 1 x 3 x 224 x 224"),
    Benchmark("densenet121_224", DenseNet121, lambda: (torch.randn(1, 3, 224, 224),),
              "DenseNet-121-shaped network (growth 32, concatenation in every layer), "
              "1 x 3 x 224 x 224"),
    Benchmark("bert_layer_s128", BertLayer, lambda: (torch.randn(1, 128, 768),),
              "BERT-base encoder layer (768, 12 heads, MLP 3072, post-norm), 1 x 128 tokens"),
    Benchmark("llama_block_s256", LlamaBlock, lambda: (torch.randn(1, 256, 512),),
              "LLaMA-style block (RMSNorm, rotary, causal GQA 8 q / 2 kv heads, SiLU-gated MLP "
              "512->1408), 1 x 256 tokens"),
    Benchmark("lm2_v5000", TinyLM, lambda: (torch.randint(0, 5000, (1, 128)),),
              "2-layer causal LM (vocab 5000, dim 256, 4 heads, MLP 1024, tied head), "
              "1 x 128 tokens"),
]

# Pieces of the models above, one operator family each, to see where time goes. Not run by
# default: name them with --models.
COMPONENTS = [
    Benchmark("linear_b64_1024", lambda: torch.nn.Linear(1024, 1024),
              lambda: (torch.randn(64, 1024),), "one Linear 1024->1024 (GEMM + bias), batch 64"),
    Benchmark("gelu_128x1024", lambda: Apply(F.gelu), lambda: (torch.randn(128, 1024),),
              "GELU (erf) on 128 x 1024, as after fc1 in encoder_s128"),
    Benchmark("layer_norm_128x256",
              lambda: Apply(lambda x: F.layer_norm(x, x.shape[-1:])),
              lambda: (torch.randn(1, 128, 256),), "aten.layer_norm over 256 on 1 x 128 x 256"),
    Benchmark("attention_h4_s128", Attention,
              lambda: tuple(torch.randn(1, 4, 128, 64) for _ in range(3)),
              "softmax attention core of encoder_s128: 4 heads x 128 tokens x 64"),
]

# Single CNN blocks (cnn_models.py). Not run by default: name them with --models.
CNN = [
    Benchmark("resnet_block_b1", lambda: BasicBlock(64, 64), lambda: (torch.randn(1, 64, 56, 56),),
              "ResNet basic block: two 3x3 convs + batch norm + ReLU, residual; 64 x 56 x 56"),
    Benchmark("resnet_block_b4", lambda: BasicBlock(64, 64), lambda: (torch.randn(4, 64, 56, 56),),
              "the same block at batch 4"),
    Benchmark("mobilenet_block_b1", lambda: InvertedResidual(32, 32),
              lambda: (torch.randn(1, 32, 28, 28),),
              "MobileNetV2 inverted residual: 1x1 expand x6, 3x3 depthwise, 1x1; 32 x 28 x 28"),
    Benchmark("mobilenet_block_b4", lambda: InvertedResidual(32, 32),
              lambda: (torch.randn(4, 32, 28, 28),), "the same block at batch 4"),
]

BY_NAME = {b.name: b for b in SUITE + COMPONENTS + CNN}


def select(names: str | None) -> list[Benchmark]:
    """The benchmarks named in a comma-separated list (the SUITE for None/empty)."""
    if not names:
        return list(SUITE)
    unknown = [n for n in names.split(",") if n not in BY_NAME]
    if unknown:
        raise SystemExit(f"unknown model(s) {unknown}; known: {sorted(BY_NAME)}")
    return [BY_NAME[n] for n in names.split(",")]
