"""Bunch-Kaufman LDL^T on the shipped kernels (kernels/linalg_ldl.cpp) against eager: the
factors and pivots are LAPACK's (1x1 and 2x2 blocks, interchanges), so they equal eager's;
solves with broadcast batches; 1x1; a singular input to ldl_factor is an InputError."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy_only import run_without_torch

import aotc
from models import Fn

L = torch.linalg


def symmetric(*shape, dtype=torch.float32, weak_diagonal=False):
    """A random symmetric matrix; with a weak diagonal, most pivots are 2x2 blocks."""
    a = torch.randn(*shape, dtype=dtype)
    a = a + a.mT
    if weak_diagonal:
        a.diagonal(dim1=-2, dim2=-1).mul_(0.01)
    return a


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ldl_factor_and_solve_match_eager(compile_model, dtype):
    torch.manual_seed(13)
    a, w = symmetric(3, 7, 7, dtype=dtype), symmetric(4, 6, 6, dtype=dtype, weak_diagonal=True)
    b, one = torch.randn(4, 6, 3, dtype=dtype), torch.randn(1, 1, dtype=dtype)

    def fn(a, w, b, one):
        ld, piv = L.ldl_factor(w)
        return (L.ldl_factor(a), L.ldl_factor_ex(w, hermitian=True), L.ldl_solve(ld, piv, b),
                L.ldl_solve(ld[0], piv[0], b), L.ldl_factor_ex(one))
    ep, model = compile_model(Fn(fn), (a, w, b, one))
    got, want = model(a, w, b, one), ep.module()(a, w, b, one)
    torch.testing.assert_close(got, want)
    assert (got[1][1] < 0).any()  # 2x2 blocks were taken
    torch.testing.assert_close(w @ got[2], b)


def test_singular_input_is_an_input_error(compile_model):
    a = symmetric(5, 5)
    ep, model = compile_model(Fn(lambda a: L.ldl_factor(a)), (a,))
    torch.testing.assert_close(model(a), ep.module()(a))
    with pytest.raises(aotc.InputError, match="singular"):
        model(torch.zeros(5, 5))
    torch.testing.assert_close(model(a), ep.module()(a))


def test_ldl_runs_without_torch(tmp_path):
    torch.manual_seed(14)
    a, b = symmetric(2, 5, 5, weak_diagonal=True), torch.randn(2, 5, 2)
    ep = torch.export.export(Fn(lambda a, b: L.ldl_solve(*L.ldl_factor(a), b)), (a, b))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "ldl.pt2")
    (outs,) = run_without_torch(path, [[a.numpy(), b.numpy()]], tmp_path / "run")
    np.testing.assert_allclose(outs[0], ep.module()(a, b).numpy(), rtol=1e-4, atol=1e-5)


def test_ill_conditioned_ldl_matches_eager(compile_model):
    """A symmetric indefinite matrix with eigenvalues from 1 to 1e-10 (float64): the same
    pivots as eager, factors and a solve to eager's accuracy."""
    torch.manual_seed(19)
    d = torch.float64
    q, _ = L.qr(torch.randn(6, 6, dtype=d))
    a = q @ torch.diag(torch.tensor([1.0, -1e-2, 1e-4, -1e-6, 1e-8, -1e-10], dtype=d)) @ q.T
    a = (a + a.T) / 2
    b = torch.randn(6, 2, dtype=d)
    ep, model = compile_model(Fn(lambda a, b: (L.ldl_factor(a), L.ldl_solve(*L.ldl_factor(a), b))),
                              (a, b))
    got, want = model(a, b), ep.module()(a, b)
    torch.testing.assert_close(got[0][1], want[0][1])
    torch.testing.assert_close(got[0][0], want[0][0])
    torch.testing.assert_close(got[1], want[1], rtol=1e-5, atol=1e-5)
