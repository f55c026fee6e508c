"""Dynamic dims at sizes 0 and 1: the package accepts what ep.module() accepts and runs it
to eager's result, and refuses what it refuses with an InputError.

Export records a dim with no minimum (and every Dim.AUTO dim) as [2, inf) by its 0/1
specialisation rule, while ep.module() checks a minimum only above 2; the kernels and the
memory plan must hold at 0 and 1 too. The runs at 0 and 1 are made in a subprocess: an
empty torch tensor's data pointer is null, and a read the kernels make from it ends the
process, which a test in this process could not report."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from torch.export import Dim

import aotc

SCRIPT = r"""
import sys, torch, aotc
ep = torch.export.load(sys.argv[1])
model = aotc.load_package(sys.argv[2])
for n in map(int, sys.argv[3].split(",")):
    torch.manual_seed(n)
    args = [torch.randn(n if k == 0 else s0, *rest) for k, (s0, *rest) in
            enumerate(eval(sys.argv[4]))]
    with torch.no_grad():
        want = ep.module()(*args)
    torch.testing.assert_close(model(*args), want, equal_nan=True)
    print("ran", n, flush=True)
"""


class Reductions(torch.nn.Module):
    """The reported model: reductions over the dynamic dim and a cat along it."""

    def forward(self, x, b):
        return x + b, (x * 2).sum(0), x.mean(0), torch.cat([x, b], 0).amax(0)


class Cats(torch.nn.Module):
    def forward(self, x, b):
        return torch.cat([b, x * 2, b], 0), torch.cat([x, x], 1), torch.cat([x, b], 0).sum(1)


class Pads(torch.nn.Module):
    def forward(self, x, b):
        return F.pad(x, (1, 1, 2, 0)), x.flip(0), torch.cat([b, F.pad(x, (0, 0, 1, 1))], 0)


class Rows(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 5)

    def forward(self, x, b):
        return (torch.softmax(x, 0), torch.log_softmax(x, -1), self.fc(x), x.t() @ x,
                x @ x.t(), F.layer_norm(x, (3,)), x.var(1), x.cumsum(0), x.prod(0))


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return F.max_pool2d(y, 2), F.adaptive_avg_pool2d(y, 1).flatten(1)


ROWS = [(5, 3), (1, 3)]  # x (dynamic dim 0) and b


def _run_sizes(tmp_path, module, shapes, dims, sizes):
    torch.manual_seed(0)
    args = tuple(torch.randn(*s) for s in shapes)
    with torch.no_grad():
        ep = torch.export.export(module.eval(), args, dynamic_shapes=dims)
    torch.export.save(ep, tmp_path / "ep.pt2")
    path = aotc.compile_and_package(ep, package_path=tmp_path / "model.pt2")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "ep.pt2"), str(path),
                           ",".join(map(str, sizes)), repr(shapes)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}"
    assert proc.stdout.split() == [w for n in sizes for w in ("ran", str(n))]


@pytest.mark.parametrize("module", [Reductions, Cats, Pads, Rows], ids=lambda m: m.__name__)
def test_declared_minimum_zero(tmp_path, module):
    _run_sizes(tmp_path, module(), ROWS, ({0: Dim("n", min=0, max=64)}, None), [5, 1, 0, 2])


@pytest.mark.parametrize("module", [Reductions, Cats, Rows], ids=lambda m: m.__name__)
def test_auto_dim_runs_below_the_recorded_minimum(tmp_path, module):
    """Dim.AUTO records [2, inf); ep.module() runs 0 and 1, and so must the package."""
    _run_sizes(tmp_path, module(), ROWS, ({0: Dim.AUTO}, None), [0, 1, 2, 7])


def test_conv_batch_zero_and_one(tmp_path):
    _run_sizes(tmp_path, ConvNet(), [(2, 3, 8, 8)], ({0: Dim.AUTO},), [0, 1, 3])


class Double(torch.nn.Module):
    def forward(self, x):
        return x * 2, x.sum(0)


def _accepts_and_refuses(ep, model, accepted, refused):
    for n in accepted:
        x = torch.randn(n, 3)
        torch.testing.assert_close(model(x), ep.module()(x))
    for n in refused:
        with pytest.raises(aotc.InputError):
            model(torch.randn(n, 3))


def test_derived_dim_without_minimum(compile_model):
    """2*d with no minimum: export records d in [2, inf), ep.module() runs d = 1 and 0;
    an odd size is d for no integer: refused (export's graph is for sizes 2*d only)."""
    ep, model = compile_model(Double(), (torch.randn(6, 3),), {"x": {0: 2 * Dim("d")}})
    assert ep.range_constraints[next(s for s in ep.range_constraints if s.is_Symbol)].lower == 2
    _accepts_and_refuses(ep, model, [2, 0, 4, 10], [])
    with pytest.raises(aotc.InputError, match="dim 0 is 3, which is 2"):
        model(torch.randn(3, 3))


def test_derived_dim_range(compile_model):
    """2*d, d in [3, 10]: ep.module() checks the size against 2*d's range [6, 20]."""
    ep, model = compile_model(Double(), (torch.randn(8, 3),),
                              {"x": {0: 2 * Dim("d", min=3, max=10)}})
    _accepts_and_refuses(ep, model, [6, 8, 20], [0, 2, 4, 22])
    for n in (4, 22):  # eager refuses these as well
        with pytest.raises(AssertionError, match="Guard failed"):
            ep.module()(torch.randn(n, 3))


def test_minimum_above_two_is_checked(compile_model):
    ep, model = compile_model(Double(), (torch.randn(5, 3),), {"x": {0: Dim("n", min=3, max=8)}})
    _accepts_and_refuses(ep, model, [3, 8], [0, 1, 2, 9])
    for n in (2, 9):
        with pytest.raises(AssertionError, match="Guard failed"):
            ep.module()(torch.randn(n, 3))
    with pytest.raises(aotc.InputError, match=r"dim 0 is 2, outside the allowed range \[3, 8\]"):
        model(torch.randn(2, 3))


def test_minimum_two_or_less_is_not_checked(compile_model):
    """min=1 and min=2 both accept 0 and 1, as ep.module() does; the maximum holds."""
    for lo in (1, 2):
        ep, model = compile_model(Double(), (torch.randn(5, 3),),
                                  {"x": {0: Dim("n", min=lo, max=8)}}, name=f"m{lo}.pt2")
        _accepts_and_refuses(ep, model, [0, 1, 2, 8], [9])
        with pytest.raises(aotc.InputError, match=r"dim 0 is 9, outside the allowed range \[0, 8\]"):
            model(torch.randn(9, 3))


def test_offset_dim_below_zero_is_refused(compile_model):
    """d + 1 at size 0 would make d = -1, a size no buffer can have: an InputError."""
    ep, model = compile_model(Double(), (torch.randn(5, 3),), {"x": {0: Dim("d") + 1}})
    _accepts_and_refuses(ep, model, [1, 2, 5], [])
    with pytest.raises(aotc.InputError, match="below 0"):
        model(torch.randn(0, 3))
