"""aotc's vectorizable float exp/erf/tanh (kernels/aotc_codegen.h) against torch and float64."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import aotc

FUNCS = {
    "exp": torch.exp, "erf": torch.erf, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
    "gelu": F.gelu, "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"),
}
SPECIALS = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 88.72, 88.73, -87.3, -103.9,
            -104.0, 1e-40, -1e-40, -100.0, 0.25, -0.25, 0.5, -0.5]


class Funcs(torch.nn.Module):
    def forward(self, x):
        return tuple(fn(x) for fn in FUNCS.values())


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    x = torch.cat([torch.tensor(SPECIALS), torch.linspace(-110, 100, 100001),
                   torch.linspace(-6, 6, 100001), torch.linspace(-0.6, 0.6, 50001),
                   torch.logspace(-30, 1.9, 5001), -torch.logspace(-30, 1.9, 5001)])
    ep = torch.export.export(Funcs(), (x,))
    model = aotc.load_package(aotc.compile_and_package(
        ep, package_path=tmp_path_factory.mktemp("math") / "m.pt2"))
    return x, dict(zip(FUNCS, model(x))), dict(zip(FUNCS, ep.module()(x)))


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_matches_torch(results, name):
    x, ours, theirs = results
    a, b = ours[name], theirs[name]
    if name == "gelu":  # torch's erf-GELU gives nan at +inf; the limit, +inf, is what we give
        assert a[2] == float("inf")
        a, b = torch.cat([a[:2], a[3:]]), torch.cat([b[:2], b[3:]])
    torch.testing.assert_close(a, b, equal_nan=True)


@pytest.mark.parametrize("name", ["exp", "erf", "tanh", "sigmoid"])
def test_relative_error_is_a_few_ulp(results, name):
    x, ours, _ = results
    exact = FUNCS[name](x.double())
    f32 = torch.finfo(torch.float32)
    normal = (exact.abs() > f32.tiny) & (exact.abs() < f32.max)  # representable as a normal float
    err = ((ours[name].double() - exact).abs() / exact.abs())[normal]
    assert float(err.max()) < 4 * torch.finfo(torch.float32).eps
