"""torch.cond: tensor and shape predicates, nested, with parameters in the branches; only
the branch the predicate picks runs; torch.while_loop with a counter, parameters and a cond
inside its body."""
from __future__ import annotations

import numpy as np
import torch
from numpy_only import run_without_torch
from torch.export import Dim

import aotc


class Nested(torch.nn.Module):
    """A shape predicate outside, a tensor predicate inside, a Linear in one branch."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        def big(x):
            def up(x):
                return self.lin(x) + 1

            def down(x):
                return x - 1

            return torch.cond(x.sum() > 0, up, down, (x,))

        def small(x):
            return x.cos() * 2

        return torch.cond(x.shape[0] > 4, big, small, (x,))


def _compile(module, args, dynamic_shapes, tmp_path):
    with torch.no_grad():
        ep = torch.export.export(module.eval(), args, dynamic_shapes=dynamic_shapes)
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2",
                                    options={"debug_dir": str(tmp_path / "debug")})
    return ep, path


def test_nested_cond_with_tensor_and_shape_predicates(tmp_path):
    torch.manual_seed(0)
    b = Dim("b", min=1, max=32)
    ep, path = _compile(Nested(), (torch.randn(6, 3),), {"x": {0: b}}, tmp_path)
    model = aotc.load_package(path)
    for n in (2, 4, 5, 9):
        for sign in (1.0, -1.0):
            x = sign * torch.rand(n, 3)
            with torch.no_grad():
                torch.testing.assert_close(model(x), ep.module()(x))
    source = (tmp_path / "debug" / "model" / "07_codegen.cpp").read_text()
    assert "if ((s" in source and "g_" in source  # the branches' kernels are guarded
    calls = [[np.float32(s) * np.ones((n, 3), np.float32)] for n, s in ((3, 1), (7, 1), (7, -1))]
    for (out,), (x,) in zip(run_without_torch(path, calls, tmp_path / "io"), calls):
        with torch.no_grad():
            torch.testing.assert_close(torch.from_numpy(out), ep.module()(torch.from_numpy(x)))


class GuardedIndex(torch.nn.Module):
    """The taken branch alone runs: the other would read out of range."""

    def forward(self, x, idx):
        def pick(x, idx):
            return x.index_select(0, idx) * 2

        def zeros(x, idx):
            return torch.zeros(idx.shape[0], x.shape[1])

        return torch.cond((idx < x.shape[0]).all(), pick, zeros, (x, idx))


def test_only_the_taken_branch_runs(tmp_path):
    ep, path = _compile(GuardedIndex(), (torch.randn(4, 2), torch.tensor([0, 3])), None,
                        tmp_path)
    model = aotc.load_package(path)
    x = torch.randn(4, 2)
    for idx in ([0, 3], [1, 2], [1, 9], [7, 8]):
        idx = torch.tensor(idx)
        torch.testing.assert_close(model(x, idx), ep.module()(x, idx))


class Iterate(torch.nn.Module):
    """A while_loop with a counter, an input bound and a Linear in the body, and a cond
    inside the body (a tensor predicate)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x, n):
        from torch._higher_order_ops.while_loop import while_loop

        def cond(i, x):
            return i < n

        def body(i, x):
            def grow(x):
                return self.lin(x).tanh() + x

            def shrink(x):
                return x * 0.5

            return i + 1, torch.cond(x.sum() > 0, grow, shrink, (x,))

        return while_loop(cond, body, (torch.tensor(0), x))


def test_while_loop(tmp_path):
    torch.manual_seed(0)
    ep, path = _compile(Iterate(), (torch.randn(2, 3), torch.tensor(3)), None, tmp_path)
    source = (tmp_path / "debug" / "model" / "07_codegen.cpp").read_text()
    assert "for (;;) {" in source and "break;" in source  # one loop, run until the predicate
    model = aotc.load_package(path)
    for n in (0, 1, 4, 9):
        x = torch.randn(2, 3)
        with torch.no_grad():
            want = ep.module()(x, torch.tensor(n))
        got = model(x, torch.tensor(n))
        torch.testing.assert_close(got, want)
        assert int(got[0]) == n
    calls = [[np.full((2, 3), v, np.float32), np.array(k)] for v, k in ((0.5, 2), (-1.0, 5))]
    for outs, (x, k) in zip(run_without_torch(path, calls, tmp_path / "io"), calls):
        with torch.no_grad():
            want = ep.module()(torch.from_numpy(x), torch.from_numpy(k))
        for o, w in zip(outs, want):
            torch.testing.assert_close(torch.from_numpy(o), w)


class Resize(torch.nn.Module):
    """Branches whose results differ in size: export names each result's size with an
    unbacked symbol, which the taken branch binds; later ops read the result and its size."""

    def forward(self, x):
        rows = torch.cond(x.sum() > 0, lambda x: x[:2] * 2, lambda x: x * 3, (x,))
        grid = torch.cond(x.shape[0] > 4, lambda x: x[1:, :2].cos(),
                          lambda x: (x.t() + 1).contiguous(), (x,))
        none = torch.cond(x.mean() > 0.5, lambda x: x[:0] - 1, lambda x: x[:1] + 0.5, (x,))
        return (rows.sum(0), rows * 2, rows.shape[0] + 1, grid, grid.sum(1), none * 2,
                none.shape[0])


def test_cond_branches_of_different_sizes(tmp_path):
    b = Dim("b", min=3, max=32)
    ep, path = _compile(Resize(), (torch.randn(6, 3),), {"x": {0: b}}, tmp_path)
    model = aotc.load_package(path)
    for n in (3, 4, 5, 9):
        for x in (torch.rand(n, 3), -torch.rand(n, 3), torch.rand(n, 3) + 0.5):
            got, want = model(x), ep.module()(x)
            torch.testing.assert_close(got, want)
            assert [tuple(g.shape) for g in got[:2]] == [tuple(w.shape) for w in want[:2]]
    calls = [[np.full((n, 3), v, np.float32)] for n, v in ((3, 1.0), (7, -1.0), (5, 0.7))]
    for outs, (x,) in zip(run_without_torch(path, calls, tmp_path / "io"), calls):
        for o, w in zip(outs, ep.module()(torch.from_numpy(x))):
            torch.testing.assert_close(torch.as_tensor(o), torch.as_tensor(w))
