"""torch.unique (sorted, with inverse and counts; dim=None or along a dim) and
unique_consecutive: outputs sized by the number of groups, which binds during the run once
the groups are known. Compared with
ep.module() on several inputs (one group, all distinct, NaNs), and from a numpy-only
process."""
from __future__ import annotations

import pytest
import torch
from numpy_only import run_without_torch
from torch.testing._internal.common_methods_invocations import op_db  # needs expecttest

import aotc
from aotc.tools.opsweep import F32, check, exportable, opinfo_name, pick_samples


class Unique(torch.nn.Module):
    def forward(self, x):
        return torch.unique(x, sorted=True, return_inverse=True, return_counts=True)


class UniqueValues(torch.nn.Module):
    def forward(self, x):
        values = torch.unique(x)
        return values * 2, values.sum()


class UniqueInverse(torch.nn.Module):
    def forward(self, x):
        values, inverse = torch.unique(x, return_inverse=True)
        return values, inverse


class Consecutive(torch.nn.Module):
    def forward(self, x):
        return torch.unique_consecutive(x, return_inverse=True, return_counts=True)


def _ints(k: int, high: int, shape=(4, 5)) -> torch.Tensor:
    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(k))


INTS = [_ints(k, high) for k, high in enumerate((1, 2, 5, 1000))]  # one group .. all distinct
FLOATS = [torch.tensor([3.0, 1, 2, 3, 1, float("nan"), float("nan"), 0.5]),
          torch.tensor([1.0, 1, 1, 1, 2, 2, 2, 2]),
          torch.randn(8, generator=torch.Generator().manual_seed(3))]


def _check(ep, model, inputs):
    for x in inputs:
        torch.testing.assert_close(model(x), ep.module()(x), equal_nan=True)


@pytest.mark.parametrize("module", [Unique, UniqueValues, UniqueInverse, Consecutive])
def test_unique_on_integers(module, tmp_path):
    ep = torch.export.export(module(), (INTS[2],))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2"))
    _check(ep, model, INTS)
    runs = [(torch.tensor([[5, 5, 1, 1, 1]] * 4) + torch.arange(4)[:, None]).int(),
            torch.zeros(4, 5, dtype=torch.int64)]
    _check(ep, model, [r.to(torch.int64) for r in runs])


@pytest.mark.parametrize("module", [Unique, Consecutive])
def test_unique_on_floats_with_nans(module, tmp_path):
    ep = torch.export.export(module(), (FLOATS[2],))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2"))
    _check(ep, model, FLOATS)


def test_unique_from_a_numpy_only_process(tmp_path):
    ep = torch.export.export(Unique(), (INTS[2],))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    calls = [[x.numpy()] for x in INTS]
    for outs, args in zip(run_without_torch(path, calls, tmp_path / "io"), calls):
        want = ep.module()(torch.from_numpy(args[0]))
        for o, w in zip(outs, want):
            torch.testing.assert_close(torch.from_numpy(o), w)


class UniqueDim(torch.nn.Module):
    def forward(self, x):
        return (torch.unique(x, dim=1, return_inverse=True, return_counts=True),
                torch.unique_consecutive(x, dim=0, return_inverse=True, return_counts=True))


def test_unique_slices_along_a_dim(tmp_path):
    """Columns sorted lexicographically; rows grouped where consecutive rows are equal."""
    def x_of(seed, high):
        x = _ints(seed, high, (4, 6))
        x[1] = x[0]  # equal consecutive rows
        x[:, 4] = x[:, 1]  # equal columns
        return x

    ep = torch.export.export(UniqueDim(), (x_of(0, 3),))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2"))
    _check(ep, model, [x_of(k, high) for k, high in enumerate((1, 2, 3, 50))])


def test_unique_of_long_slices_is_refused_by_name():
    from aotc.frontend.importer import import_program

    class Wide(torch.nn.Module):
        def forward(self, x):
            return torch.unique(x, dim=0)

    ep = torch.export.export(Wide(), (_ints(0, 3, (4, 100)),))
    with pytest.raises(aotc.UnsupportedOperatorError, match="at most 64 elements"):
        import_program(ep)


OPINFOS = {opinfo_name(o): o for o in op_db if opinfo_name(o) in ("unique", "unique_consecutive")}


@pytest.mark.parametrize("name", sorted(OPINFOS))
@pytest.mark.parametrize("dtype", [F32, torch.int64])
def test_opinfo_samples(name, dtype, tmp_path):
    """PyTorch's own samples (dim=None and along each dim), each exported alone."""
    checked = 0
    for s in pick_samples(OPINFOS[name], dtype):
        samples, ep = exportable(OPINFOS[name], [s])
        if samples:
            check(OPINFOS[name], samples, ep, tmp_path / str(s.index))
            checked += 1
    assert checked >= 4, f"only {checked} samples of {name} export"
