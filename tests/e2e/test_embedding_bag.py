"""embedding_bag (sum, mean, max; offsets read at run time, per-sample weights, padding,
include_last_offset, max_norm renormalizing the weight in place) against eager, with every
output of the ATen op (offset2bag, bag_size, max_indices) too."""
from __future__ import annotations

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

import aotc
from aotc.tools.opsweep import Sample, check, export

aten = torch.ops.aten


def test_every_opinfo_sample_float32(tmp_path):
    info = next(i for i in op_db if i.name == "nn.functional.embedding_bag")
    torch.manual_seed(0)
    samples = [Sample.of(k, s) for k, s in
               enumerate(info.sample_inputs_func(info, "cpu", torch.float32, False))]
    check(info, samples, export(info, samples), tmp_path)


class AllOutputs(torch.nn.Module):
    def __init__(self, mode: int, include_last: bool, padding_idx: int):
        super().__init__()
        self.args = (mode, include_last, padding_idx)

    def forward(self, w, i, o, psw=None):
        mode, include_last, padding = self.args
        return aten._embedding_bag_forward_only(w, i, o, False, mode, False, psw, include_last,
                                                padding)


@pytest.mark.parametrize("mode", [0, 1, 2], ids=["sum", "mean", "max"])
@pytest.mark.parametrize("include_last", [False, True])
@pytest.mark.parametrize("padding_idx", [-1, 4])
def test_all_outputs_with_empty_bags(tmp_path, mode, include_last, padding_idx):
    torch.manual_seed(0)
    w, i = torch.randn(7, 3), torch.tensor([1, 2, 4, 5, 4, 6, 0])
    last = [7] if include_last else []  # include_last_offset: the last offset ends the bags
    o = torch.tensor([0, 2, 2, 5] + last)
    args = (w, i, o) + ((torch.randn(7),) if mode == 0 else ())
    module = AllOutputs(mode, include_last, padding_idx)
    ep = torch.export.export(module, args)
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "e.pt2"))
    # with include_last_offset eager returns len(offsets) bag sizes and max indices where its
    # own shape function (the exported program's sizes) says one per bag: those are left out
    kept = slice(0, 2) if include_last else slice(0, 4)
    torch.testing.assert_close(model(*args)[kept], ep.module()(*args)[kept])
    other = (w, torch.tensor([3, 3, 1, 0, 4, 2, 6]), torch.tensor([0, 0, 4, 6] + last)) + args[3:]
    torch.testing.assert_close(model(*other)[kept], ep.module()(*other)[kept])


def test_max_norm_renormalizes_the_weight_in_place(tmp_path):
    class M(torch.nn.Module):
        def forward(self, w, i, o):
            return torch.nn.functional.embedding_bag(i, w, o, mode="mean", max_norm=1.0,
                                                     norm_type=2.0)

    torch.manual_seed(0)
    w, i, o = torch.randn(8, 4) * 2, torch.tensor([1, 3, 3, 6, 0]), torch.tensor([0, 3])
    ep = torch.export.export(M(), (w.clone(), i, o))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "e.pt2"))
    w_eager, w_aotc = w.clone(), w.clone()
    torch.testing.assert_close(model(w_aotc, i, o), ep.module()(w_eager, i, o))
    assert not torch.equal(w_eager, w)  # rows 0, 1, 3, 6 were scaled down
    torch.testing.assert_close(w_aotc, w_eager)
