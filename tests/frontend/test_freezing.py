"""Freezing of created tensors written in place: a mask built as window attention builds it
(x.new_zeros, then slice writes) folds into one constant when nothing the program keeps
reads the tensor after the writes; otherwise the writes stay in the program."""
from __future__ import annotations

import torch

from aotc.frontend.freezing import plan_folding


class LabelMask(torch.nn.Module):
    def forward(self, x):
        labels = x.new_zeros(8, 8)
        k = 0
        for rows in ((0, -4), (-4, -2), (-2, None)):
            for cols in ((0, -4), (-4, -2), (-2, None)):
                labels[rows[0]:rows[1], cols[0]:cols[1]] = k
                k += 1
        diff = labels.view(-1).unsqueeze(0) - labels.view(-1).unsqueeze(1)
        return x + diff.masked_fill(diff != 0, -100.0)


class ReadAfterWrite(torch.nn.Module):
    def forward(self, x):
        z = x.new_zeros(4)
        z[1] = 2.0
        return x + z  # the program keeps this reader: z's write must stay


def _fills(ep, removed):
    return [n for n in ep.graph.nodes if "fill_" in str(n.target) or "copy_" in str(n.target)]


def test_created_mask_folds_with_its_writes(compile_model):
    x = torch.randn(64, 64)
    ep, model = compile_model(LabelMask(), (x,))
    folded, removed = plan_folding(ep)
    assert len(folded) == 1 and all(w in removed for w in _fills(ep, removed))
    for _ in range(2):
        x = torch.randn(64, 64)
        torch.testing.assert_close(model(x), ep.module()(x))


def test_write_read_by_a_kept_op_is_not_folded(compile_model):
    x = torch.randn(4)
    ep, model = compile_model(ReadAfterWrite(), (x,))
    folded, removed = plan_folding(ep)
    assert not any(w in removed for w in _fills(ep, removed))
    torch.testing.assert_close(model(x), ep.module()(x))


class ConvertedWeight(torch.nn.Module):
    """An int8 weight widened for a float matmul, as torchao's int8 weight-only linears do:
    aten.to may alias its input, but a conversion computes, so it folds; a same-dtype `to`
    only moves the weight and stays."""

    def __init__(self):
        super().__init__()
        self.register_buffer("q", torch.randint(-3, 4, (16, 8), dtype=torch.int8))
        self.w = torch.nn.Parameter(torch.randn(8, 16))

    def forward(self, x):
        return x @ self.q.t().to(torch.float32) + x @ self.w.to(torch.float32)


def test_a_dtype_conversion_of_a_weight_folds(compile_model):
    x = torch.randn(3, 8)
    ep, model = compile_model(ConvertedWeight(), (x,))
    folded, _ = plan_folding(ep)
    assert [n.target for n in folded] == [torch.ops.aten.to.dtype]
    assert next(iter(folded.values())).value.dtype == torch.float32
    torch.testing.assert_close(model(x), ep.module()(x))
