"""The loop plan (scheduler/loops.py): which nest each kind of kernel gets, that the plan
follows the target's `Loops`, and that codegen prints what the plan says."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from aotc.passes.pipeline import compile_program
from aotc.scheduler.loops import (
    ArgReduction,
    ColumnReduction,
    CutAxis,
    LaneReduction,
    PointwiseLoops,
    RegionLoops,
    RowLoops,
    TiledCopy,
    WholeReduction,
    format_loop_plan,
)
from aotc.target import host_target, target_for


def _plan(fn, *args, target=None, dynamic_shapes=None):
    class M(torch.nn.Module):
        def forward(self, *xs):
            return fn(*xs)

    ep = torch.export.export(M(), args, dynamic_shapes=dynamic_shapes)
    return compile_program(ep, target or host_target(), build=False)


def _nests(compiled, kind):
    return [n for n in compiled.loops.nests.values() if isinstance(n, kind)]


def test_transpose_is_a_tiled_copy():
    x = torch.randn(256, 96)
    (nest,) = _nests(_plan(lambda x: x.t().contiguous() + 1, x), TiledCopy)
    assert nest.axes == (0, 1) and nest.tile == host_target().loops.tile
    assert nest.parallel is not None and nest.parallel.collapse == 2


def test_cat_along_the_last_axis_cuts_it():
    a, b = torch.randn(8, 5), torch.randn(8, 11)
    (nest,) = _nests(_plan(lambda a, b: torch.cat([a.exp(), b], 1), a, b), CutAxis)
    assert nest.axis == 1 and [(lo, hi) for lo, hi, _ in nest.pieces] == [(0, 5), (5, 16)]


def test_merged_heads_split_the_inner_axis():
    x = torch.randn(2, 4, 16, 32)  # (B, H, S, D) -> (B, S, H*D)
    compiled = _plan(lambda x: (x.permute(0, 2, 1, 3).reshape(2, 16, 128) * 2), x)
    (nest,) = [n for n in _nests(compiled, PointwiseLoops) if n.split is not None]
    assert nest.split == (2, 32)
    assert [str(v) for v, _ in nest.loops] == ["i0", "i1", "i2o", "i2i"]


def test_inner_axes_read_as_trailing_dims_are_one_loop():
    """A per-channel epilogue over [C, H, W] loops over C and H*W (H fixed at 0), and so
    does a product with a [H, W] mask; an axis read on its own (a scale along W) keeps the
    axes apart."""
    x, s = torch.randn(1, 6, 7, 5), torch.randn(6)
    merged = _plan(lambda x, s: (x * s.view(1, 6, 1, 1)).relu(), x, s)
    (nest,) = _nests(merged, PointwiseLoops)
    assert [int(n) for _, n in nest.loops] == [1, 6, 1, 35]
    w = torch.randn(5)
    kept = _plan(lambda x, w: x * w, x, w)
    (nest,) = _nests(kept, PointwiseLoops)
    assert [int(n) for _, n in nest.loops] == [1, 6, 7, 5]
    # tril's mask, a [7, 5] buffer read as the trailing dims: merged too
    masked = _plan(lambda x: x.tril() * 2, x)
    mul = [n for n in _nests(masked, PointwiseLoops) if len(n.loops) == 4]
    assert [[int(n) for _, n in m.loops] for m in mul] == [[1, 6, 1, 35]]


def test_merged_inner_axes_match_eager(tmp_path):
    import aotc

    class M(torch.nn.Module):
        def forward(self, x, s, b, w):
            y = torch.relu(x * s.view(1, -1, 1, 1) + b.view(1, -1, 1, 1)).to(torch.float16)
            return y, x.tril(1) * s.view(1, -1, 1, 1), x * w

    args = (torch.randn(2, 3, 7, 9), torch.randn(3), torch.randn(3), torch.randn(9))
    ep = torch.export.export(M(), args)
    compiled = aotc.load_package(aotc.compile_and_package(ep, tmp_path / "m.pt2"))
    torch.testing.assert_close(compiled(*args), ep.module()(*args))


def test_reductions_choose_their_strategy():
    x = torch.randn(300, 64)
    compiled = _plan(lambda x: (x.sum(0), x.sum(), x.argmax(1), x.amax(1)), x)
    (column,) = _nests(compiled, ColumnReduction)
    assert column.axis == 0 and column.one_tile and column.width == 64
    (whole,) = _nests(compiled, WholeReduction)
    assert whole.parallel is None and whole.inner is not None and whole.inner.reduction
    assert len(_nests(compiled, ArgReduction)) == 1
    (lanes,) = _nests(compiled, LaneReduction)
    assert lanes.lanes == host_target().loops.lanes and lanes.block == host_target().loops.block


def test_a_float_max_of_everything_stays_on_one_thread():
    # OpenMP's max reduction has no NaN rule: one thread, in vector lanes
    compiled = _plan(lambda x: (x.amax(), x.sum()), torch.randn(100000))
    (lanes,) = _nests(compiled, LaneReduction)
    assert lanes.parallel is None
    (whole,) = _nests(compiled, WholeReduction)  # the sum splits across threads
    assert whole.inner is not None and whole.inner.reduction


def test_softmax_is_a_row_group():
    (rows,) = _nests(_plan(lambda x: torch.softmax(x, -1), torch.randn(64, 512)), RowLoops)
    assert rows.parallel is not None and rows.parallel.collapse == 1


def test_index_put_with_repeatable_positions_writes_in_order():
    def put(x, i, v):
        return x.index_put((i,), v, accumulate=True)

    x, i, v = torch.randn(40000), torch.randint(0, 40000, (30000,)), torch.randn(30000)
    (regions,) = _nests(_plan(put, x, i, v), RegionLoops)
    assert regions.parallel is not None and regions.writes == (None,)


def test_small_and_dynamic_work():
    small = _plan(lambda x: x.exp(), torch.randn(4, 4))
    assert all(n.parallel is None for n in small.loops.nests.values())
    batch = torch.export.Dim("batch", max=4096)
    dyn = _plan(lambda x: x.exp(), torch.randn(8, 64), dynamic_shapes=(({0: batch},),))
    (nest,) = dyn.loops.nests.values()
    assert nest.parallel is not None and not nest.parallel.work.is_number
    (sym,) = nest.parallel.work.free_symbols
    assert f"if(64*{sym} >= {host_target().loops.parallel_min_work})" in dyn.source


@pytest.mark.parametrize("isa", ["avx2", "neon"])
def test_the_plan_follows_the_target(isa):
    """A schedule change is the target's (and the planner's) business: other lanes, blocks
    and tiles in `Loops` reach the printed code with codegen untouched."""
    base = target_for(isa)
    other = dataclasses.replace(base, loops=dataclasses.replace(
        base.loops, lanes=8, block=256, tile=32, parallel_min_work=1 << 30))
    x = torch.randn(64, 96)
    compiled = _plan(lambda x: (x.t().contiguous() + 1, x.sum(1)), x, target=other)
    (tiled,) = _nests(compiled, TiledCopy)
    (lanes,) = _nests(compiled, LaneReduction)
    assert tiled.tile == 32 and lanes.lanes == 8 and lanes.block == 256
    assert all(n.parallel is None for n in compiled.loops.nests.values())
    assert "lanes[8]" in compiled.source and "+= 256)" in compiled.source
    assert "+= 32)" in compiled.source and "#pragma omp parallel" not in compiled.source


def test_the_dump_names_each_kernel_and_its_nest():
    compiled = _plan(lambda x: (x.t().contiguous(), x.sum(0)), torch.randn(300, 64))
    text = format_loop_plan(compiled.loops)
    assert "tiled copy, axes 0 and 1 in 16 x 16 blocks" in text
    assert "column reduction along axis 0, one tile" in text
    assert len([line for line in text.splitlines() if not line.startswith(" ")]) == \
        len(compiled.loops.nests)


def _permuted(x):
    """[B, H, S, D] read as [B, S, H*D]: the innermost index goes through // D and % D."""
    return x.transpose(1, 2).reshape(x.shape[0], x.shape[2], -1)


@pytest.mark.parametrize("reduce", ["amax", "amin", "amax_rows"])
def test_float_max_min_of_permuted_views_read_along_memory(tmp_path, reduce):
    """A float max or min (lanes in one thread: OpenMP's reduction lacks the NaN rule) over
    a permuted view loops its innermost reduced axis as (r // 64, r % 64): no division per
    element, and bit for bit eager's result, NaN included."""
    import aotc

    fns = {"amax": lambda x: _permuted(x).amax(), "amin": lambda x: _permuted(x).amin(),
           "amax_rows": lambda x: _permuted(x).amax(-1)}
    x = torch.randn(2, 12, 16, 64)
    x[1, 3, 5, 7] = float("nan")
    compiled = _plan(fns[reduce], x)
    (lanes,) = _nests(compiled, LaneReduction)
    assert len(lanes.reduction.ranges) == (4 if reduce != "amax_rows" else 2)
    assert "/ 64" not in compiled.source and "% 64" not in compiled.source

    class M(torch.nn.Module):
        def forward(self, x):
            return fns[reduce](x)

    ep = torch.export.export(M(), (x,))
    got = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "r.pt2"))(x)
    torch.testing.assert_close(got, ep.module()(x), equal_nan=True, rtol=0, atol=0)


def test_float_sums_of_permuted_views_keep_their_lanes():
    """A float sum is not split: its grouping into lanes is its rounding."""
    compiled = _plan(lambda x: _permuted(x).sum(), torch.randn(2, 12, 16, 64))
    assert all(len(n.reduction.ranges) == 3 for n in _nests(compiled, LaneReduction))
