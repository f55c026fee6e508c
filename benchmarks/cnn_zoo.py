"""The CNN families the suite grows to beyond ResNet and MobileNetV2, written from their
papers' layer tables (torchvision's configurations, random seeded weights): a MobileNetV3-
Large-shaped network (squeeze-excitation, hardswish), an EfficientNet-B0-shaped network
(MBConv with squeeze-excitation, SiLU, 5x5 depthwise) and a DenseNet-121-shaped network
(every layer concatenating its 32 new channels onto the block's features)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from cnn_models import randomize_norms

nn = torch.nn


def conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1,
            act: type[nn.Module] | None = nn.ReLU) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups,
                                         bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class SqueezeExcite(nn.Module):
    """Global average pool -> 1x1 reduce -> act -> 1x1 expand -> gate, times the input."""

    def __init__(self, channels: int, squeezed: int, act=nn.ReLU, gate=nn.Hardsigmoid):
        super().__init__()
        self.reduce = nn.Conv2d(channels, squeezed, 1)
        self.expand = nn.Conv2d(squeezed, channels, 1)
        self.act, self.gate = act(), gate()

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.expand(self.act(self.reduce(s))))


def make_divisible(v: float, divisor: int = 8) -> int:
    rounded = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * v else rounded


class MBConv(nn.Module):
    """Inverted residual with an optional squeeze-excitation (MobileNetV3, EfficientNet)."""

    def __init__(self, cin: int, hidden: int, cout: int, k: int, stride: int, se: int | None,
                 act, gate=nn.Hardsigmoid, se_act=nn.ReLU):
        super().__init__()
        layers: list[nn.Module] = []
        if hidden != cin:
            layers.append(conv_bn(cin, hidden, 1, act=act))
        layers.append(conv_bn(hidden, hidden, k, stride, groups=hidden, act=act))
        if se:
            layers.append(SqueezeExcite(hidden, se, se_act, gate))
        layers.append(conv_bn(hidden, cout, 1, act=None))
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class MobileNetV3(nn.Module):
    """MobileNetV3-Large: (kernel, expanded, out, squeeze-excite, hardswish, stride)."""
    CONFIG = ((3, 16, 16, False, False, 1), (3, 64, 24, False, False, 2),
              (3, 72, 24, False, False, 1), (5, 72, 40, True, False, 2),
              (5, 120, 40, True, False, 1), (5, 120, 40, True, False, 1),
              (3, 240, 80, False, True, 2), (3, 200, 80, False, True, 1),
              (3, 184, 80, False, True, 1), (3, 184, 80, False, True, 1),
              (3, 480, 112, True, True, 1), (3, 672, 112, True, True, 1),
              (5, 672, 160, True, True, 2), (5, 960, 160, True, True, 1),
              (5, 960, 160, True, True, 1))

    def __init__(self, classes: int = 1000):
        super().__init__()
        layers: list[nn.Module] = [conv_bn(3, 16, 3, 2, act=nn.Hardswish)]
        cin = 16
        for k, hidden, cout, se, hs, stride in self.CONFIG:
            layers.append(MBConv(cin, hidden, cout, k, stride,
                                 make_divisible(hidden / 4) if se else None,
                                 nn.Hardswish if hs else nn.ReLU))
            cin = cout
        layers.append(conv_bn(cin, 960, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.Linear(960, 1280), nn.Hardswish(), nn.Linear(1280, classes))
        randomize_norms(self)

    def forward(self, x):
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class EfficientNetB0(nn.Module):
    """EfficientNet-B0: (expand ratio, kernel, stride, out, repeats); SE at 1/4 of the block's
    input channels, SiLU, sigmoid gate."""
    CONFIG = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
              (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))

    def __init__(self, classes: int = 1000):
        super().__init__()
        layers: list[nn.Module] = [conv_bn(3, 32, 3, 2, act=nn.SiLU)]
        cin = 32
        for expand, k, stride, cout, repeats in self.CONFIG:
            for r in range(repeats):
                layers.append(MBConv(cin, cin * expand, cout, k, stride if r == 0 else 1,
                                     max(1, cin // 4), nn.SiLU, nn.Sigmoid, nn.SiLU))
                cin = cout
        layers.append(conv_bn(cin, 1280, 1, act=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1280, classes)
        randomize_norms(self)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class DenseLayer(nn.Module):
    def __init__(self, cin: int, growth: int, bn_size: int = 4):
        super().__init__()
        self.body = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(),
                                  nn.Conv2d(cin, bn_size * growth, 1, bias=False),
                                  nn.BatchNorm2d(bn_size * growth), nn.ReLU(),
                                  nn.Conv2d(bn_size * growth, growth, 3, 1, 1, bias=False))

    def forward(self, x):
        return torch.cat([x, self.body(x)], 1)


class DenseNet121(nn.Module):
    BLOCKS, GROWTH, INIT = (6, 12, 24, 16), 32, 64

    def __init__(self, classes: int = 1000):
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, self.INIT, 7, 2, 3, bias=False),
                                   nn.BatchNorm2d(self.INIT), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
        c = self.INIT
        for b, n in enumerate(self.BLOCKS):
            for _ in range(n):
                layers.append(DenseLayer(c, self.GROWTH))
                c += self.GROWTH
            if b < len(self.BLOCKS) - 1:
                layers += [nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1, bias=False),
                           nn.AvgPool2d(2, 2)]
                c //= 2
        layers += [nn.BatchNorm2d(c), nn.ReLU()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(c, classes)
        randomize_norms(self)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))
