"""Small networks shaped like the architectures users export (random weights, eval mode),
each compiled with a dynamic batch (and length or image size where natural) and compared
with eager at several sizes."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from aotc.target import host, target_for

nn = torch.nn
Dim = torch.export.Dim


def _randomize_norms(model: nn.Module) -> nn.Module:
    """Batch norm statistics away from the identity, so folding them is really tested."""
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            m.running_mean.copy_(torch.rand(m.num_features, generator=g) - 0.5)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.rand(m.num_features, generator=g) - 0.5)
    return model


# ---- ResNet-style ---------------------------------------------------------------------------

class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNetStyle(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        self.layers = nn.Sequential(BasicBlock(16, 16, 1), BasicBlock(16, 32, 2),
                                    BasicBlock(32, 32, 1))
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# ---- MobileNetV2-style ----------------------------------------------------------------------

def same_pad(x, kernel: int, stride: int):
    """TensorFlow's 'SAME' padding (asymmetric: the extra element goes after)."""
    pads = []
    for size in reversed(x.shape[2:]):
        out = math.ceil(size / stride)
        total = max((out - 1) * stride + kernel - size, 0)
        pads += [total // 2, total - total // 2]
    return F.pad(x, pads)


class ConvBNReLU6(nn.Module):
    def __init__(self, cin, cout, kernel, stride, groups=1):
        super().__init__()
        self.kernel, self.stride = kernel, stride
        self.conv = nn.Conv2d(cin, cout, kernel, stride, 0, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return F.relu6(self.bn(self.conv(same_pad(x, self.kernel, self.stride))))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        self.residual = stride == 1 and cin == cout
        self.body = nn.Sequential(ConvBNReLU6(cin, hidden, 1, 1),
                                  ConvBNReLU6(hidden, hidden, 3, stride, groups=hidden),
                                  nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class MobileNetV2Style(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = ConvBNReLU6(3, 16, 3, 2)
        self.blocks = nn.Sequential(InvertedResidual(16, 16, 1, 1), InvertedResidual(16, 24, 2, 6),
                                    InvertedResidual(24, 24, 1, 6), InvertedResidual(24, 32, 2, 6))
        self.head = ConvBNReLU6(32, 64, 1, 1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.fc(x.mean((2, 3)))


# ---- UNet-style -----------------------------------------------------------------------------

def double_conv(cin, cout, norm=nn.BatchNorm2d):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), norm(cout), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU())


class UNetStyle(nn.Module):
    def __init__(self):
        super().__init__()
        self.d1, self.d2, self.mid = double_conv(3, 8), double_conv(8, 16), double_conv(16, 32)
        self.up2 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.u2 = double_conv(32, 16, lambda c: nn.GroupNorm(4, c))
        self.u1 = double_conv(16 + 8, 8, lambda c: nn.InstanceNorm2d(c, affine=True))
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        s1 = self.d1(x)
        s2 = self.d2(F.max_pool2d(s1, 2))
        m = self.mid(F.max_pool2d(s2, 2))
        y = self.u2(torch.cat([self.up2(m), s2], 1))
        y = F.interpolate(y, scale_factor=2, mode="nearest")
        return self.out(self.u1(torch.cat([y, s1], 1)))


# ---- ConvNeXt-style and ViT-style ----------------------------------------------------------

class ConvNeXtBlock(nn.Module):
    """7x7 depthwise conv, then layer norm and an MLP over channels in channels-last."""

    def __init__(self, dim=32):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.pw1, self.pw2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), 0.1))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.pw2(F.gelu(self.pw1(self.norm(y)))) * self.gamma
        return x + y.permute(0, 3, 1, 2)


class ConvNeXtStyle(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 4, 4)
        self.blocks = nn.Sequential(ConvNeXtBlock(), ConvNeXtBlock())
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((-2, -1)))


class ViTStyle(nn.Module):
    """Patch conv, class token, position embedding, scaled_dot_product_attention."""

    def __init__(self, dim=32, patch=4):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, 17, dim))
        self.encoder = nn.TransformerEncoderLayer(dim, 4, 64, dropout=0.0, batch_first=True,
                                                  norm_first=True)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(x.shape[0], -1, -1), t], 1) + self.pos
        q = t.view(t.shape[0], t.shape[1], 4, 8).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, q, q).transpose(1, 2).reshape(t.shape)
        return self.head(self.encoder(t + a)[:, 0])


# ---- Swin-style ------------------------------------------------------------------------------

class WindowAttention(nn.Module):
    """Multi-head attention inside each window, with a learned bias per relative offset
    (a table read through a precomputed index) and an optional shift mask."""

    def __init__(self, dim, heads, window):
        super().__init__()
        self.heads, self.window = heads, window
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads) * 0.1)
        coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window),
                                            indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window - 1)
        self.register_buffer("index", rel[..., 0] * (2 * window - 1) + rel[..., 1],
                             persistent=False)

    def forward(self, x, mask):
        # x: [windows*B, N, C]; mask: [windows, N, N] or None
        bw, n, c = x.shape
        q, k, v = self.qkv(x).view(bw, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        att = (q * (c // self.heads) ** -0.5) @ k.transpose(-2, -1)
        bias = self.table[self.index.view(-1)].view(n, n, -1).permute(2, 0, 1)
        att = att + bias.unsqueeze(0)
        if mask is not None:
            w = mask.shape[0]
            att = att.view(bw // w, w, self.heads, n, n) + mask[None, :, None]
            att = att.view(bw, self.heads, n, n)
        out = (att.softmax(-1) @ v).transpose(1, 2).reshape(bw, n, c)
        return self.proj(out)


class SwinBlock(nn.Module):
    def __init__(self, dim, heads, window, shift):
        super().__init__()
        self.window, self.shift = window, shift
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, heads, window)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def _shift_mask(self, hp, wp, like):
        # label each of the 3x3 regions the roll creates; pairs from different regions are masked
        ws, s = self.window, self.shift
        labels = like.new_zeros(hp, wp)
        k = 0
        for hs in ((0, -ws), (-ws, -s), (-s, None)):
            for wsl in ((0, -ws), (-ws, -s), (-s, None)):
                labels[hs[0]:hs[1], wsl[0]:wsl[1]] = k
                k += 1
        win = labels.view(hp // ws, ws, wp // ws, ws).permute(0, 2, 1, 3).reshape(-1, ws * ws)
        diff = win.unsqueeze(1) - win.unsqueeze(2)
        return diff.masked_fill(diff != 0, -100.0)

    def forward(self, x):
        b, h, w, c = x.shape
        ws = self.window
        y = self.norm1(x)
        pad_h, pad_w = (ws - h % ws) % ws, (ws - w % ws) % ws
        y = F.pad(y, (0, 0, 0, pad_w, 0, pad_h))
        hp, wp = h + pad_h, w + pad_w
        mask = None
        if self.shift:
            y = torch.roll(y, (-self.shift, -self.shift), (1, 2))
            mask = self._shift_mask(hp, wp, y)
        win = y.view(b, hp // ws, ws, wp // ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        win = self.attn(win.reshape(-1, ws * ws, c), mask)
        y = win.view(b, hp // ws, wp // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        y = y.reshape(b, hp, wp, c)
        if self.shift:
            y = torch.roll(y, (self.shift, self.shift), (1, 2))
        x = x + y[:, :h, :w].contiguous()
        return x + self.mlp(self.norm2(x))


class PatchMerging(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm, self.reduce = nn.LayerNorm(4 * dim), nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x):
        x = F.pad(x, (0, 0, 0, x.shape[2] % 2, 0, x.shape[1] % 2))
        parts = [x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]]
        return self.reduce(self.norm(torch.cat(parts, -1)))


class SwinStyle(nn.Module):
    """Patch embedding, a regular and a shifted window block, patch merging, two more."""

    def __init__(self, dim=32, window=4):
        super().__init__()
        self.patch, self.norm = nn.Conv2d(3, dim, 4, 4), nn.LayerNorm(dim)
        self.stage1 = nn.Sequential(SwinBlock(dim, 2, window, 0),
                                    SwinBlock(dim, 2, window, window // 2))
        self.merge = PatchMerging(dim)
        self.stage2 = nn.Sequential(SwinBlock(2 * dim, 4, window, 0),
                                    SwinBlock(2 * dim, 4, window, window // 2))
        self.head_norm, self.head = nn.LayerNorm(2 * dim), nn.Linear(2 * dim, 10)

    def forward(self, x):
        x = self.norm(self.patch(x).permute(0, 2, 3, 1))
        x = self.stage2(self.merge(self.stage1(x)))
        return self.head(self.head_norm(x).mean((1, 2)))


# ---- speech front end -----------------------------------------------------------------------

class SpeechFrontEnd(nn.Module):
    """A wav2vec-like feature encoder (conv1d stack with GELU, group norm after the first)
    and a transformer layer."""

    def __init__(self, dim=32):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv1d(1, dim, 10, 5), nn.Conv1d(dim, dim, 3, 2),
                                    nn.Conv1d(dim, dim, 3, 2)])
        self.group_norm = nn.GroupNorm(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.pos = nn.Conv1d(dim, dim, 5, padding=2, groups=4)
        self.encoder = nn.TransformerEncoderLayer(dim, 4, 64, dropout=0.0, batch_first=True,
                                                  activation="gelu")

    def forward(self, wave):
        x = wave.unsqueeze(1)
        for k, conv in enumerate(self.convs):
            x = conv(x)
            x = F.gelu(self.group_norm(x) if k == 0 else x)
        x = x + F.gelu(self.pos(x))
        return self.encoder(self.norm(x.transpose(1, 2)))


# ---- GPT-style decoder ----------------------------------------------------------------------

class GPTStyle(nn.Module):
    """Positions from the attention mask's cumsum, a causal mask from arange comparisons,
    as the popular libraries build them."""

    def __init__(self, vocab=50, dim=32, heads=4, layers=2, max_len=64):
        super().__init__()
        self.heads = heads
        self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(nn.ModuleDict({
            "ln1": nn.LayerNorm(dim), "qkv": nn.Linear(dim, 3 * dim), "proj": nn.Linear(dim, dim),
            "ln2": nn.LayerNorm(dim), "fc": nn.Linear(dim, 4 * dim), "out": nn.Linear(4 * dim, dim),
        }) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids, attention_mask):
        b, t = ids.shape
        positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        seq = torch.arange(t, device=ids.device)
        causal = seq[None, :] <= seq[:, None]
        allowed = causal[None, None] & attention_mask[:, None, None, :].bool()
        x = self.tok(ids) + self.pos(positions)
        for blk in self.blocks:
            q, k, v = blk["qkv"](blk["ln1"](x)).split(x.shape[-1], dim=-1)
            q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
            scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
            att = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
            x = x + blk["proj"]((att @ v).transpose(1, 2).reshape(b, t, -1))
            x = x + blk["out"](F.gelu(blk["fc"](blk["ln2"](x))))
        return self.head(self.ln(x))


def _gpt_inputs(b, t, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 50, (b, t), generator=g)
    mask = torch.ones(b, t, dtype=torch.int64)
    mask[0, t - t // 3:] = 0  # padding at the end of the first row
    return ids, mask


# ---- the tests ------------------------------------------------------------------------------

def _image(b, h, w=None, c=3):
    return (torch.randn(b, c, h, w or h),)


ARCHITECTURES = {
    # name: (model, example args, dynamic_shapes, further args to compare at)
    "resnet": (ResNetStyle, _image(2, 32), lambda: {"x": {0: Dim("b", max=16)}},
               [_image(1, 32), _image(5, 32)]),
    "resnet_dynamic_image": (ResNetStyle, _image(2, 32),
                             lambda: {"x": {0: Dim("b", max=16), 2: Dim("h", min=16, max=128),
                                            3: Dim("w", min=16, max=128)}},
                             [_image(1, 40, 24), _image(3, 64)]),
    "mobilenetv2": (MobileNetV2Style, _image(2, 32), lambda: {"x": {0: Dim("b", max=16)}},
                    [_image(1, 32), _image(4, 32)]),
    "convnext": (ConvNeXtStyle, _image(2, 32), lambda: {"x": {0: Dim("b", max=16)}},
                 [_image(1, 32), _image(5, 32)]),
    "vit": (ViTStyle, _image(2, 16), lambda: {"x": {0: Dim("b", max=16)}},
            [_image(1, 16), _image(5, 16)]),
    # 56x56: 14x14 patches, padded to 16 for the windows; 7x7 after merging, padded to 8
    "swin": (SwinStyle, _image(2, 56), lambda: {"x": {0: Dim("b", max=16)}},
             [_image(1, 56), _image(5, 56)]),
    "unet": (UNetStyle, _image(2, 16), lambda: {"x": {0: Dim("b", max=16)}},
             [_image(1, 16), _image(3, 16)]),
    "speech_front_end": (SpeechFrontEnd, (torch.randn(2, 800),),
                         lambda: {"wave": {0: Dim("b", max=8), 1: Dim("n", min=200, max=4000)}},
                         # export guards this program against batch 1 (ep.module()
                         # refuses it too), and aotc checks export's guards
                         [(torch.randn(4, 400),), (torch.randn(3, 1234),)]),
    "gpt_decoder": (GPTStyle, _gpt_inputs(2, 12),
                    lambda: {"ids": {0: Dim("b", max=8), 1: Dim("t", min=2, max=64)},
                             "attention_mask": {0: Dim("b", max=8), 1: Dim("t", min=2, max=64)}},
                    [_gpt_inputs(1, 5, 1), _gpt_inputs(3, 30, 2)]),
}


def _cases():
    cases = [pytest.param(name, "host", id=name) for name in sorted(ARCHITECTURES)]
    if not host.missing_features(target_for("avx2")):  # the AVX2 build of the CNNs too
        cases += [pytest.param(name, "avx2", id=f"{name}-avx2")
                  for name in ("mobilenetv2", "resnet", "unet")]
    return cases


@pytest.mark.parametrize("name,isa", _cases())
def test_architecture_matches_eager(compile_model, name, isa):
    torch.manual_seed(0)
    make, args, dynamic, more = ARCHITECTURES[name]
    model = _randomize_norms(make()).eval()
    ep, compiled = compile_model(model, args, dynamic_shapes=dynamic(), options={"isa": isa})
    for a in [args, *more]:
        with torch.no_grad():
            expected = model(*a)
        torch.testing.assert_close(compiled(*a), expected, rtol=1e-4, atol=1e-4)
