"""What eager refuses at run time for some sizes, the compiled model refuses too, with an
aotc.InputError naming the op, from a numpy-only child that survives a crash: an input
guard that divides by a size or an int input that is 0 (eager's ZeroDivisionError, a C
division that would trap), a reduction with no identity over an empty dim (amax, argmax,
max.dim, median, mode, kthvalue, topk past the size), a reshape whose -1 is ambiguous over
zero elements, a constant index past a dynamic size, instance norm's affine parameters over
an empty batch. Where eager runs (the same ops over the non-empty dim, a branch not taken),
the outputs match it."""
from __future__ import annotations

import pytest
import torch
from case_runner import Case, check, run_cases
from torch.export import Dim

import aotc

N = Dim("n", min=0, max=16)


def _compare(module, example, dynamic, calls, tmp_path, options=None):
    """Compile `module`, run each call of `calls` (args tuples) in a numpy-only child and
    hold it to ep.module(); returns (failures, the aotc errors' messages)."""
    ep = torch.export.export(module, example, dynamic_shapes=dynamic)
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2", options=options)
    cases, expected = [], []
    for args in calls:
        try:
            expected.append((ep.module()(*args), None))
        except Exception as e:  # eager refuses: aotc must raise an InputError
            expected.append((None, e))
        cases.append(Case(str([tuple(a.shape) if isinstance(a, torch.Tensor) else a
                               for a in args]), str(path), None, args))
    results = run_cases(cases, tmp_path / "io")
    problems = [f"at {c.label}: {p}" for c, r, (want, err) in zip(cases, results, expected)
                if (p := check(r, want, err, rtol=1e-5, atol=1e-5))]
    return problems, [r.get("message", "") for r in results]


class GuardsDividing(torch.nn.Module):
    def forward(self, x, n, m):
        torch._check(n % m == 1)  # m == 0: ZeroDivisionError in ep.module()'s guards
        torch._check(x.shape[1] % x.shape[0] != 1)
        return x * n


def test_guard_dividing_by_zero_is_an_input_error(tmp_path):
    dynamic = ({0: Dim("a", min=0, max=8), 1: Dim("c", min=0, max=64)}, Dim.DYNAMIC, Dim.DYNAMIC)
    calls = [(torch.randn(3, 5), 7, 3), (torch.randn(3, 5), 7, 0), (torch.randn(0, 5), 7, 3),
             (torch.randn(2, 5), 7, 3), (torch.randn(4, 6), 9, 4)]
    problems, messages = _compare(GuardsDividing(), (torch.randn(3, 5), 7, 3), dynamic, calls,
                                  tmp_path)
    assert not problems, "\n".join(problems)
    assert "(n % m) == 1 divides by zero" in messages[1]
    assert "divides by zero" in messages[2]


def _fn(f):
    class Fn(torch.nn.Module):
        def forward(self, x):
            return f(x)
    return Fn()


# (name, the op, whether eager refuses a dim 0 of size 0); x is [n, 4]
REFUSED_AT_ZERO = {
    "amax_dim": lambda x: x.amax(0),
    "amax_all": lambda x: x.amax(),
    "amin_dims": lambda x: x.amin((0, 1)),
    "max_all": lambda x: x.max(),
    "min_all": lambda x: x.min(),
    "max_dim": lambda x: x.max(0),
    "min_dim": lambda x: x.min(0, keepdim=True),
    "argmax_dim": lambda x: x.argmax(0),
    "argmax_all": lambda x: x.argmax(),
    "argmin_dim": lambda x: x.argmin(0),
    "aminmax": lambda x: torch.aminmax(x, dim=0),
    "kthvalue": lambda x: x.kthvalue(2, 0),
    "median_dim": lambda x: x.median(0),
    "nanmedian_dim": lambda x: x.nanmedian(0),
    "mode": lambda x: x.mode(0),
    "topk": lambda x: x.topk(2, 0),
}


@pytest.mark.parametrize("name", sorted(REFUSED_AT_ZERO))
def test_reduction_without_identity_over_an_empty_dim(name, tmp_path):
    x = torch.randn(5, 4)
    x[2, 1] = x[3, 1]  # a tie for mode
    calls = [(torch.randn(n, 4),) for n in (0, 1, 2, 6)]
    problems, messages = _compare(_fn(REFUSED_AT_ZERO[name]), (x,), ({0: N},), calls, tmp_path)
    assert not problems, "\n".join(problems)
    assert ".default at " in messages[0] or ".dim at " in messages[0], messages[0]
    assert "test_run_checks.py" in messages[0], messages[0]  # the source line


def test_reductions_over_the_non_empty_dim_run_at_size_zero(tmp_path):
    """Over the other dim an empty batch gives empty outputs in eager: no check fires."""
    def f(x):
        return (x.amax(1), x.argmax(1), x.max(1), x.kthvalue(2, 1), x.median(1), x.mode(1),
                x.topk(2, 1), x.amin(1, keepdim=True))
    calls = [(torch.randn(n, 4),) for n in (0, 1, 3)]
    problems, _ = _compare(_fn(f), (torch.randn(5, 4),), ({0: N},), calls, tmp_path)
    assert not problems, "\n".join(problems)


class Guarded(torch.nn.Module):
    """amax over the dim only in the branch taken when it is not empty."""

    def forward(self, x):
        return torch.cond(x.shape[0] > 0, lambda x: x.amax(0), lambda x: x.sum(0), (x,))


def test_check_inside_a_branch_holds_only_where_it_is_taken(tmp_path):
    calls = [(torch.randn(n, 4),) for n in (0, 1, 3)]
    problems, _ = _compare(Guarded(), (torch.randn(5, 4),), ({0: N},), calls, tmp_path)
    assert not problems, "\n".join(problems)


VIEWS = {
    # eager: "cannot reshape tensor of 0 elements into shape [0, 3, -1]"
    "reshape_minus_one": lambda x: x.reshape(x.shape[0], 3, -1) * 2,
    "view_minus_one_first": lambda x: x.view(-1, 4) + 1,  # [-1, 4] is never ambiguous
    "select_first": lambda x: x[0] * 2,  # select(): index 0 out of range at n = 0
    "select_last": lambda x: x[-1] * 2,  # (export itself guards x[2] to n >= 3)
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_refuse_what_eager_refuses(name, tmp_path):
    calls = [(torch.randn(n, 12),) for n in (0, 1, 2, 3, 5)]
    problems, _ = _compare(_fn(VIEWS[name]), (torch.randn(4, 12),), ({0: N},), calls, tmp_path)
    assert not problems, "\n".join(problems)


def test_instance_norm_with_affine_parameters_over_an_empty_batch(tmp_path):
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1),
                                torch.nn.InstanceNorm2d(4, affine=True)).eval()
    calls = [(torch.randn(n, 3, 6, 6),) for n in (0, 1, 2)]
    with torch.no_grad():
        problems, _ = _compare(model, (torch.randn(2, 3, 6, 6),), ({0: N},), calls, tmp_path)
    assert not problems, "\n".join(problems)
