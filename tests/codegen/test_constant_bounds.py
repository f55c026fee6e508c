"""relu, clamp, hardtanh and maximum/minimum with a number (codegen/cpp/ops.bound): one
compare and select against the constant, bit for bit what eager gives, NaN, infinities and
signed zeros included (eager keeps the value on a tie: relu(-0.0) is -0.0)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

import aotc

SPECIAL = [float("nan"), -0.0, 0.0, float("inf"), -float("inf"), -1.0, 1.0, 6.0, -6.0, 0.5,
           1e-30, -1e-30, 3.0e38, -3.0e38]


class Bounds(torch.nn.Module):
    def forward(self, x):
        return (torch.relu(x), F.relu6(x), torch.clamp(x, min=-0.0),
                torch.clamp(x, max=0.0), torch.clamp(x, -1.0, 0.5), F.hardtanh(x),
                torch.clamp_min(x, 1e-30), torch.clamp_max(x, -1e-30))


def test_bounds_are_eagers_bit_for_bit(tmp_path):
    x = torch.tensor(SPECIAL * 5, dtype=torch.float32)  # vector bodies and remainders
    ep = torch.export.export(Bounds(), (x,))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "b.pt2",
                                    options={"debug_dir": str(tmp_path / "dump")})
    got = aotc.load_package(path)(x)
    for g, e in zip(got, ep.module()(x)):
        assert torch.equal(g.view(torch.int32), e.view(torch.int32)), (g, e)
    code = (tmp_path / "dump" / "model" / "07_codegen.cpp").read_text()
    assert "aotc::maximum" not in code and "aotc::minimum" not in code


def test_a_nan_bound_keeps_propagating(tmp_path):
    """A NaN constant is no bound: maximum(x, nan) is NaN everywhere, as in eager."""

    class NanBound(torch.nn.Module):
        def forward(self, x):
            return torch.maximum(x, torch.tensor(float("nan"))), torch.clamp(x, min=float("nan"))

    x = torch.tensor(SPECIAL, dtype=torch.float32)
    ep = torch.export.export(NanBound(), (x,))
    got = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "n.pt2"))(x)
    for g, e in zip(got, ep.module()(x)):
        torch.testing.assert_close(g, e, equal_nan=True)
