"""Frontend errors name the op and the user's source line."""
from __future__ import annotations

import pytest
import torch

import aotc


class FakeQuantize(torch.nn.Module):
    """A QAT model exported before its conversion: fake quantization has no lowering."""

    def forward(self, x):
        y = x * 2
        return torch.fake_quantize_per_tensor_affine(y, 0.1, 0, 0, 255)  # the line named


class ErfInv(torch.nn.Module):
    def forward(self, x):
        return torch.erfinv(x.clamp(-0.5, 0.5))


def test_unsupported_op_names_op_and_source_line(tmp_path):
    ep = torch.export.export(FakeQuantize(), (torch.randn(3, 3),))
    with pytest.raises(aotc.UnsupportedOperatorError) as info:
        aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    msg = str(info.value)
    assert info.value.op.startswith("aten.fake_quantize_per_tensor_affine") and info.value.op in msg
    assert "test_errors.py:" in msg and "return torch.fake_quantize_per_tensor_affine(y" in msg
    assert not (tmp_path / "m.pt2").exists()


def test_decomposition_gap_names_both_ops(tmp_path, monkeypatch):
    # without its own rule, erfinv decomposes into prims.erf_inv, which has no lowering
    from aotc.lowering import LOWERINGS
    monkeypatch.delitem(LOWERINGS, torch.ops.aten.erfinv.default)
    ep = torch.export.export(ErfInv(), (torch.randn(3, 4),))
    with pytest.raises(aotc.UnsupportedOperatorError, match=r"aten.erfinv.default.*prims.erf_inv"):
        aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")


def test_not_an_exported_program(tmp_path):
    with pytest.raises(aotc.CompileError, match="expected a torch.export.ExportedProgram"):
        aotc.compile_and_package(torch.nn.Linear(2, 2), package_path=tmp_path / "m.pt2")


class Scaled(torch.nn.Module):
    def forward(self, x):
        y = torch.tanh(x)
        return y * 3  # the line the internal error must name


def _failing(exc):
    def rule(*args, **kwargs):
        raise exc
    return rule


@pytest.mark.parametrize("exc", [TypeError("boom"), NotImplementedError("boom"),
                                 KeyError("boom"), AssertionError("boom")])
def test_internal_lowering_error_names_op_and_source_line(tmp_path, monkeypatch, exc):
    """An unexpected exception inside a lowering leaves as an aotc error that names the
    op and the user's line, the original kept as its cause."""
    from aotc.lowering import LOWERINGS
    from aotc.lowering.registry import Rule

    op = torch.ops.aten.mul.Tensor
    monkeypatch.setitem(LOWERINGS, op, Rule(_failing(exc), "pointwise"))
    ep = torch.export.export(Scaled(), (torch.randn(3, 4),))
    with pytest.raises(aotc.CompileError) as info:
        aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    err = info.value
    assert isinstance(err, aotc.errors.InternalError)
    assert err.op == "aten.mul.Tensor" and err.__cause__ is exc
    msg = str(err)
    assert "aten.mul.Tensor" in msg and "test_errors.py:" in msg and "return y * 3" in msg
    assert type(exc).__name__ in msg
    assert not (tmp_path / "m.pt2").exists()


def test_internal_scheduling_error_names_op_and_source_line(tmp_path, monkeypatch):
    """The same for a step on a buffer after import (fusing it), through its origin."""
    import aotc.scheduler.fusion as fusion

    def broken(body, ranges):
        raise TypeError("boom")

    monkeypatch.setattr(fusion, "simplify_loads", broken)
    ep = torch.export.export(Scaled(), (torch.randn(3, 4),))
    with pytest.raises(aotc.errors.InternalError) as info:
        aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    msg = str(info.value)
    assert "fusing" in msg and "aten.tanh.default" in msg
    assert "test_errors.py:" in msg and "y = torch.tanh(x)" in msg
    assert isinstance(info.value.__cause__, TypeError)


def test_compile_error_without_an_op_gets_one(tmp_path, monkeypatch):
    """A CompileError raised inside a lowering that does not say where gets the op and the
    line added, and keeps its type and text."""
    from aotc.lowering import LOWERINGS
    from aotc.lowering.registry import Rule

    op = torch.ops.aten.mul.Tensor
    monkeypatch.setitem(LOWERINGS, op, Rule(_failing(aotc.CompileError("no good")), "pointwise"))
    ep = torch.export.export(Scaled(), (torch.randn(3, 4),))
    with pytest.raises(aotc.CompileError, match=r"^no good \(while importing aten.mul.Tensor "
                                                r"at test_errors.py:\d+ \(return y \* 3 "):
        aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")


def test_anything_left_becomes_a_compile_error(tmp_path, monkeypatch):
    """An exception outside every per-op step (here in packaging) is a CompileError too."""
    import aotc.api

    def broken(*args, **kwargs):
        raise OSError("disk on fire")

    monkeypatch.setattr(aotc.api, "package_aoti", broken)
    ep = torch.export.export(Scaled(), (torch.randn(3, 4),))
    with pytest.raises(aotc.CompileError, match="OSError: disk on fire") as info:
        aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    assert isinstance(info.value.__cause__, OSError)
