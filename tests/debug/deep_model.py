"""A 30-node model for the debugging tools' tests (one relu, one tanh among many ops)."""
from __future__ import annotations

import torch


class Deep(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fcs = torch.nn.ModuleList(torch.nn.Linear(16, 16) for _ in range(7))
        self.ln = torch.nn.LayerNorm(16)

    def forward(self, x):
        for k, fc in enumerate(self.fcs):
            x = fc(x)
            x = torch.sigmoid(x) if k != 3 else torch.tanh(x)
            x = x * 0.5 + 1.0
            if k == 5:
                x = torch.relu(x - 1.2)  # the planted bug's op
        return torch.softmax(self.ln(x), -1) * 2.0


def make():
    """(module, example inputs): what `aotc minify deep_model.py:make` builds."""
    torch.manual_seed(0)
    return Deep().eval(), (torch.randn(4, 16),)
