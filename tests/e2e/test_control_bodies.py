"""Inside torch.cond branches and torch.while_loop bodies, every op compiles as it does at
the top level: conv2d with an inference batch norm, linear, layer_norm, sdpa, matmul,
embedding, attention written out by hand (the attention template), a weight computed from
parameters (folded by freezing) and a tensor constant the branch itself creates."""
from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from torch._higher_order_ops.while_loop import while_loop

import aotc


class Ops(torch.nn.Module):
    """`block(x)` for x of [2, 4, 8] runs each op once."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(2)
        self.lin = torch.nn.Linear(8, 8)
        self.norm = torch.nn.LayerNorm(8)
        self.emb = torch.nn.Embedding(10, 8)
        self.w = torch.nn.Parameter(torch.randn(8, 8) * 0.3)
        self.scale = torch.nn.Parameter(torch.rand(8) + 0.5)
        with torch.no_grad():  # statistics of their own, so the eval batch norm is no identity
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)

    def block(self, x):
        conv = self.bn(self.conv(x[:, None])).mean(1)
        heads = x[:, None]
        sdpa = F.scaled_dot_product_attention(heads, heads * 0.5, heads)[:, 0]
        q = self.lin(x)
        by_hand = torch.softmax((q @ x.transpose(-1, -2)) * 0.35, dim=-1) @ x
        idx = (x.abs() * 3).long().clamp(0, 9)
        emb = self.emb(idx).mean(-1)
        computed = F.linear(x, self.w * self.scale[:, None])  # folds into one constant
        own = torch.tensor([0.5, -0.5, 1.0, 0.0, 0.25, -1.0, 2.0, 0.1])
        y = conv + sdpa + self.norm(q) + by_hand + x @ self.w + emb + computed + own
        return torch.tanh(y * 0.25)


class InCond(Ops):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: self.block(x), lambda x: self.block(-x) * 0.5,
                          (x,))


class InWhile(Ops):
    def forward(self, n, x):
        return while_loop(lambda i, x: i < n, lambda i, x: (i + 1, self.block(x)),
                          (torch.tensor(0), x))


def _export(module, args, tmp_path):
    torch.manual_seed(0)
    with torch.no_grad():
        ep = torch.export.export(module.eval(), args)
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2",
                                    options={"debug_dir": str(tmp_path / "debug")})
    return ep, aotc.load_package(path), (tmp_path / "debug" / "model" / "00_import.txt").read_text()


def _took_top_level_paths(program: str) -> None:
    """The import's dump shows the templates and the folded weight in the branch or body."""
    assert re.search(r"= attention\[.*q=linear", program)  # the chain written out by hand
    assert re.search(r"= conv2d .* \* c_batch_norm_folded_weight", program)  # bn folded in
    assert re.search(r"= gemm.* @ c_mul_\d+", program)  # w * scale, computed at compile time


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_ops_in_cond_branches(sign, tmp_path):
    torch.manual_seed(1)
    ep, model, program = _export(InCond(), (torch.rand(2, 4, 8),), tmp_path)
    _took_top_level_paths(program)
    for seed in range(3):
        x = sign * torch.rand(2, 4, 8, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            torch.testing.assert_close(model(x), ep.module()(x))


def test_ops_in_while_loop_body(tmp_path):
    torch.manual_seed(2)
    ep, model, program = _export(InWhile(), (torch.tensor(2), torch.randn(2, 4, 8)), tmp_path)
    _took_top_level_paths(program)
    for n in (0, 1, 3):
        x = torch.randn(2, 4, 8, generator=torch.Generator().manual_seed(n))
        with torch.no_grad():
            torch.testing.assert_close(model(torch.tensor(n), x), ep.module()(torch.tensor(n), x))
