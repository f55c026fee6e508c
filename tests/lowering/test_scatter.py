"""Writes into regions: index_put (accumulate too), index_copy, index_add, scatter,
slice_scatter, select_scatter and in-place updates through views of locals, against
eager; OpInfo's samples of each; repeated positions resolved as on PyTorch's CPU."""
from __future__ import annotations

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db  # needs expecttest

from aotc.ir.printer import format_program
from aotc.tools.opsweep import F32, check, exportable, opinfo_name, pick_samples

I64 = torch.int64
SWEPT = {"index_put": (F32, I64), "index_copy": (F32, I64), "index_add": (F32, I64),
         "scatter": (F32, I64), "scatter_add": (F32, I64), "slice_scatter": (F32, I64),
         "select_scatter": (F32, I64)}
OPINFOS = {opinfo_name(o): o for o in op_db if opinfo_name(o) in SWEPT}


@pytest.mark.parametrize("name,dtype", [(n, d) for n, ds in SWEPT.items() for d in ds],
                         ids=lambda v: str(v).removeprefix("torch."))
def test_opinfo_samples(name, dtype, tmp_path):
    info = OPINFOS[name]
    # x[mask] = values with one value per selected element: a data-dependent count of
    # writes, which aotc refuses (test_boolean_mask_update_with_many_values)
    picked = [s for s in pick_samples(info, dtype) if not _mask_indices(s)]
    samples, ep = exportable(info, picked)
    assert samples, f"no sample of {name} exports"
    check(info, samples, ep, tmp_path)


def _mask_indices(sample) -> bool:
    return any(t.dtype is torch.bool for t in sample.tensors())


class LocalUpdates(torch.nn.Module):
    """Writes through select, slice and transposed views, an indexed +=, a masked fill."""

    def forward(self, x, v, idx):
        y = x * 2
        y[:, 0] = v
        y[idx] += 1
        z = y.t()
        z[1:3, ::2] = -1.0
        w = x.clone()
        w[w > 0.5] = 0.0
        row = y[1]  # a view taken before the next update sees it
        y.add_(w)
        return y, row * 1, w


def test_updates_through_views(compile_model):
    args = (torch.randn(6, 4), torch.randn(6), torch.tensor([0, 2, 2, -1]))
    ep, model = compile_model(LocalUpdates(), args)
    for seed in range(4):
        g = torch.Generator().manual_seed(seed)
        x, v = torch.randn(6, 4, generator=g), torch.randn(6, generator=g)
        idx = torch.randint(-6, 6, (4,), generator=g)
        for got, want in zip(model(x, v, idx), ep.module()(x, v, idx)):
            torch.testing.assert_close(got, want)


class Duplicates(torch.nn.Module):
    """Repeated positions: the last value wins; accumulation adds each in turn."""

    def forward(self, x, idx, values):
        put = torch.index_put(x, (idx,), values)
        acc = torch.index_put(x, (idx,), values, accumulate=True)
        added = x.index_add(0, idx.remainder(x.shape[0]), values, alpha=0.5)
        return put, acc, added


def test_repeated_positions_are_deterministic(compile_model):
    import aotc

    n, k = 64, 40000  # over the parallel threshold: the writes still run in order
    g = torch.Generator().manual_seed(0)
    x, values = torch.randn(n, 3, generator=g), torch.randn(k, 3, generator=g)
    idx = torch.randint(-n, n, (k,), generator=g)
    ep, model = compile_model(Duplicates(), (x, idx, values))
    # eager's parallel index_put leaves the winner of repeated positions unspecified; its
    # deterministic mode runs them in order, as aotc always does: the same bits
    torch.use_deterministic_algorithms(True)
    try:
        want = ep.module()(x, idx, values)
    finally:
        torch.use_deterministic_algorithms(False)
    first = model(x, idx, values)
    for got, w in zip(first, want):
        torch.testing.assert_close(got, w, rtol=0, atol=0)  # the same bits and dtype
    for _ in range(20):  # the same bits every run, whatever the threads do
        for got, f in zip(model(x, idx, values), first):
            assert torch.equal(got, f)
    path = model.path
    for threads in (1, 2, 3):  # and whatever the thread count
        other = aotc.load_package(path, num_threads=threads)
        for got, f in zip(other(x, idx, values), first):
            assert torch.equal(got, f)


class OutOfRange(torch.nn.Module):
    def forward(self, x, idx):
        return x.index_copy(0, idx, torch.ones(idx.shape[0], 2))


def test_index_out_of_range_is_an_input_error(compile_model):
    from aotc.errors import InputError

    ep, model = compile_model(OutOfRange(), (torch.zeros(4, 2), torch.tensor([1, 3])))
    torch.testing.assert_close(model(torch.zeros(4, 2), torch.tensor([3, 0])),
                               ep.module()(torch.zeros(4, 2), torch.tensor([3, 0])))
    with pytest.raises(InputError, match="index out of range"):
        model(torch.zeros(4, 2), torch.tensor([1, 4]))


class MaskedUpdate(torch.nn.Module):
    def forward(self, x, values):
        y = x.clone()
        y[y > 0] = values
        return y


def test_boolean_mask_update_with_many_values(tmp_path):
    """A mask computed from the data selects as many positions as there are values: each
    selected position takes the next value, in order; another count is an input error."""
    import aotc

    ep = torch.export.export(MaskedUpdate(), (torch.tensor([1.0, -2.0, 3.0]), torch.ones(2)))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2"))
    for x in (torch.tensor([1.0, -2.0, 3.0]), torch.tensor([-1.0, 5.0, 6.0])):
        values = torch.tensor([7.0, 8.0])
        torch.testing.assert_close(model(x, values), ep.module()(x, values))
    with pytest.raises(aotc.InputError, match="mask selects a number of positions other than"):
        model(torch.tensor([1.0, 2.0, 3.0]), torch.ones(2))


def test_region_write_prints_its_writes():
    from aotc.frontend.importer import import_program

    class SliceUpdate(torch.nn.Module):
        def forward(self, x):
            y = x + 1
            y[1:3] = 0.0
            return y

    ep = torch.export.export(SliceUpdate(), (torch.randn(4, 2),))
    text = format_program(import_program(ep))
    assert "region write from add[i0, i1]; [i0 + 1, i1] = " in text
    assert "for i in (2, 2)" in text


def test_updates_run_without_torch(tmp_path):
    from numpy_only import run_without_torch

    import aotc

    args = (torch.randn(6, 4), torch.randn(6), torch.tensor([0, 2, 2, -1]))
    ep = torch.export.export(LocalUpdates(), args)
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    calls = [[torch.randn(6, 4), torch.randn(6), torch.tensor([5, -2, 1, 1])] for _ in range(3)]
    got = run_without_torch(path, [[t.numpy() for t in c] for c in calls], tmp_path / "io")
    for outs, c in zip(got, calls):
        for o, want in zip(outs, ep.module()(*c)):
            torch.testing.assert_close(torch.from_numpy(o), want)
