"""Frontend errors name the op and the user's source line."""
from __future__ import annotations

import pytest
import torch

import aotc


class Eigvals(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        return torch.linalg.eigvals(y).real  # the line the error must name


class ErfInv(torch.nn.Module):
    def forward(self, x):
        return torch.erfinv(x.clamp(-0.5, 0.5))


def test_unsupported_op_names_op_and_source_line(tmp_path):
    ep = torch.export.export(Eigvals(), (torch.randn(3, 3),))
    with pytest.raises(aotc.UnsupportedOperatorError) as info:
        aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    msg = str(info.value)
    assert info.value.op.startswith("aten.linalg_eig") and info.value.op in msg
    assert "test_errors.py:" in msg and "return torch.linalg.eigvals(y).real" in msg
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
