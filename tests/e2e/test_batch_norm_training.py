"""Batch norm in training mode: batch statistics, the saved mean and invstd, and the running
statistics updated in place (inputs of the program, or model state for a module's buffers),
against eager."""
from __future__ import annotations

import pytest
import torch

import aotc

aten = torch.ops.aten


class FunctionalBN(torch.nn.Module):
    def forward(self, x, rm, rv, w, b):
        return torch.nn.functional.batch_norm(x, rm, rv, w, b, training=True, momentum=0.3,
                                              eps=1e-3)


class LegitBN(torch.nn.Module):
    def forward(self, x, rm, rv, w, b):
        return aten._native_batch_norm_legit(x, w, b, rm, rv, True, 0.2, 1e-5)


class WithUpdateBN(torch.nn.Module):
    def forward(self, x, rm, rv, w, b):
        return aten._batch_norm_with_update(x, w, b, rm, rv, 0.5, 0.6)[:3]


@pytest.mark.parametrize("module", [FunctionalBN, LegitBN, WithUpdateBN])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_training_batch_norm_updates_running_stats(tmp_path, module, dtype):
    torch.manual_seed(0)
    args = tuple(t.to(dtype) for t in (torch.randn(4, 3, 5, 2), torch.randn(3), torch.rand(3) + 0.5,
                                       torch.randn(3), torch.randn(3)))
    ep = torch.export.export(module(), tuple(a.clone() for a in args))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "bn.pt2"))
    eager_args, aotc_args = [a.clone() for a in args], [a.clone() for a in args]
    want = ep.module()(*eager_args)
    torch.testing.assert_close(model(*aotc_args), want)
    for got, expected, before in zip(aotc_args[1:3], eager_args[1:3], args[1:3]):
        assert not torch.equal(expected, before)  # eager did update them
        torch.testing.assert_close(got, expected)


def test_batch_norm_without_running_stats(tmp_path):
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.batch_norm(x, None, None, training=True)

    x = torch.randn(6, 4)
    ep = torch.export.export(M(), (x,))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "bn.pt2"))
    torch.testing.assert_close(model(x), ep.module()(x))


@pytest.mark.parametrize("functional", [False, True], ids=["in_place", "functionalized"])
def test_train_mode_module_keeps_running_stats_as_state(tmp_path, functional):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                              torch.nn.ReLU(), torch.nn.BatchNorm2d(4, momentum=0.2)).train()
    ep = torch.export.export(net, (torch.randn(2, 3, 8, 8),))
    if functional:  # BUFFER_MUTATION outputs of the functional batch norm
        ep = ep.run_decompositions()
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "bn.pt2"))
    eager = ep.module()
    for _ in range(3):
        x = torch.randn(2, 3, 8, 8)
        torch.testing.assert_close(model(x), eager(x))
    buffers = dict(eager.named_buffers())
    assert sorted(model.buffer_names()) == sorted(buffers)
    for name in model.buffer_names():
        torch.testing.assert_close(model.get_buffer(name), buffers[name])
    assert int(model.get_buffer("1.num_batches_tracked")) == 3
