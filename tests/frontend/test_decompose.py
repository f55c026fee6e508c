"""Ops with no lowering of their own compile through a per-node decomposition."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

CASES = {
    "elu": lambda x: F.elu(x),
    "softplus": lambda x: F.softplus(x),
    "mish": lambda x: F.mish(x),
    "addcmul": lambda x: torch.addcmul(x, x, x, value=0.5),
    "lerp": lambda x: torch.lerp(x, x * 2, 0.3),
    "layer_norm": lambda x: F.layer_norm(x, (4,)),
    "sdpa": lambda x: F.scaled_dot_product_attention(*(x.view(1, 2, 3, 2),) * 3),
}


class Wrap(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


@pytest.mark.parametrize("name", sorted(CASES))
def test_decomposed_ops_match_eager(compile_model, name):
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    ep, model = compile_model(Wrap(CASES[name]), (x,))
    torch.testing.assert_close(model(x), ep.module()(x))


class Table(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("idx", torch.tensor([0, 2, 1]))


class MaskedIndex(torch.nn.Module):
    """Indexing into buffers of a module and its submodule through _unsafe_masked_index,
    whose decomposition assigns into its index list (fx gives it an immutable one)."""

    def __init__(self):
        super().__init__()
        self.sub = Table()
        self.register_buffer("table", torch.randn(4, 5))
        self.register_buffer("mask", torch.tensor([True, False, True]))

    def forward(self, x):
        picked = torch.ops.aten._unsafe_masked_index(self.table, self.mask[:, None],
                                                     [self.sub.idx[:, None], None], 0.0)
        return x + picked


def test_decomposition_that_mutates_its_argument_list(compile_model):
    x = torch.randn(3, 5)
    ep, model = compile_model(MaskedIndex(), (x,))
    torch.testing.assert_close(model(x), ep.module()(x))


def test_exception_inside_a_decomposition_names_the_op_and_line(monkeypatch):
    import aotc
    from aotc.frontend import importer

    def broken(op, node):
        raise RuntimeError("tracing went wrong")

    monkeypatch.setattr(importer, "decompose_node", broken)
    ep = torch.export.export(Wrap(lambda x: F.softplus(x)), (torch.randn(3, 4),))
    with pytest.raises(aotc.UnsupportedOperatorError,
                       match=r"aten.softplus.default \(at test_decompose.py:\d+ .*its decomposition "
                             r"failed \(RuntimeError: tracing went wrong\)"):
        aotc.compile_and_package(ep)


class LinearCrossEntropy(torch.nn.Module):
    """F.linear_cross_entropy with batch chunking: export keeps torch's custom op (torch has
    no decomposition for it); aotc decomposes it itself."""

    def __init__(self, reduction):
        super().__init__()
        self.reduction = reduction
        self.head = torch.nn.Parameter(torch.randn(7, 5))
        self.class_weight = torch.nn.Parameter(torch.rand(7) + 0.5)

    def forward(self, x, target):
        from torch.nn.modules.linear_cross_entropy_options import LinearCrossEntropyOptions

        return F.linear_cross_entropy(x, self.head, target, weight=self.class_weight,
                                      reduction=self.reduction, ignore_index=3,
                                      options=LinearCrossEntropyOptions(batch_chunk_size=4))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_chunked_linear_cross_entropy(compile_model, reduction):
    torch.manual_seed(0)
    x, target = torch.randn(10, 5), torch.tensor([0, 3, 6, 1, 2, 3, 4, 5, 6, 0])
    ep, model = compile_model(LinearCrossEntropy(reduction), (x, target))
    assert any("torch_nn" in str(n.target) for n in ep.graph.nodes)
    torch.testing.assert_close(model(x, target), ep.module()(x, target))
