"""Complex matrices on the shipped linear-algebra kernels against eager: LU and what is
built on it (solve, inv, det, slogdet, logdet, lu_solve with adjoint and from the right,
lu_unpack, matrix_power), Cholesky of Hermitian matrices (lower and upper, solve, inverse),
triangular solves and the matrix exponential, in complex64 and complex128, batched, 1x1;
a singular complex input is an InputError; numpy-only."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy_only import run_without_torch

import aotc
from models import Fn

L = torch.linalg


def hermitian_pd(a: torch.Tensor) -> torch.Tensor:
    n = a.shape[-1]
    return a @ a.mH + n * torch.eye(n, dtype=a.dtype)


def lu_family(a, b):
    lu, piv = L.lu_factor(a)
    return (L.lu(a), L.solve(a, b), L.solve(a, b[..., 0]), L.solve(a, b.mT, left=False),
            L.inv(a), L.det(a), L.slogdet(a), torch.logdet(hermitian_pd(a)),
            L.lu_solve(lu, piv, b), L.lu_solve(lu, piv, b, adjoint=True),
            L.lu_solve(lu, piv, b.mT, left=False),
            L.lu_solve(lu, piv, b.mT, left=False, adjoint=True), torch.lu_unpack(lu, piv),
            L.matrix_power(a, -2))


def cholesky_family(a, b):
    s = hermitian_pd(a)
    c, cu = L.cholesky(s), L.cholesky(s, upper=True)
    return (c, cu, L.cholesky_ex(s), torch.cholesky_solve(b, c),
            torch.cholesky_solve(b, cu, upper=True), torch.cholesky_inverse(c),
            torch.cholesky_inverse(cu, upper=True), L.solve_triangular(a, b, upper=True),
            L.solve_triangular(a, b.mT, upper=False, left=False),
            L.solve_triangular(a, b, upper=False, unitriangular=True),
            torch.triangular_solve(b, a, upper=False, transpose=True), L.matrix_exp(0.3 * a))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("family", [lu_family, cholesky_family])
def test_complex_matrices_match_eager(compile_model, dtype, family):
    torch.manual_seed(15)
    a = torch.randn(3, 5, 5, dtype=dtype) + 5 * torch.eye(5, dtype=dtype)
    b = torch.randn(3, 5, 2, dtype=dtype)
    ep, model = compile_model(Fn(family), (a, b))
    torch.testing.assert_close(model(a, b), ep.module()(a, b))


def test_rectangular_and_1x1_complex_lu(compile_model):
    torch.manual_seed(16)
    w, one = torch.randn(2, 6, 4, dtype=torch.complex64), torch.randn(1, 1, dtype=torch.complex64)
    fn = Fn(lambda w, one: (L.lu(w), L.lu(w.mT), L.inv(one), L.det(one), L.matrix_exp(one)))
    ep, model = compile_model(fn, (w, one))
    torch.testing.assert_close(model(w, one), ep.module()(w, one))


def test_singular_complex_matrix_is_an_input_error(compile_model):
    a = torch.randn(4, 4, dtype=torch.complex64) + 4 * torch.eye(4)
    ep, model = compile_model(Fn(lambda a: L.inv(a)), (a,))
    torch.testing.assert_close(model(a), ep.module()(a))
    with pytest.raises(aotc.InputError, match="singular"):
        model(torch.zeros(4, 4, dtype=torch.complex64))
    torch.testing.assert_close(model(a), ep.module()(a))


def test_complex_solve_runs_without_torch(tmp_path):
    torch.manual_seed(17)
    a = torch.randn(2, 4, 4, dtype=torch.complex64) + 4 * torch.eye(4)
    b = torch.randn(2, 4, 3, dtype=torch.complex64)
    ep = torch.export.export(Fn(lambda a, b: (L.solve(a, b), L.det(a))), (a, b))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "complex.pt2")
    (outs,) = run_without_torch(path, [[a.numpy(), b.numpy()]], tmp_path / "run")
    for got, want in zip(outs, ep.module()(a, b)):
        assert got.dtype == np.complex64
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


def test_vandermonde_of_complex_values(compile_model):
    """linalg.vander of complex x: running products (aotc's cumprod scans reals only)."""
    torch.manual_seed(18)
    x = torch.randn(3, 4, dtype=torch.complex64)
    fn = Fn(lambda x: (L.vander(x), L.vander(x, N=6), L.vander(x[0, 0], N=3),
                       L.vander(x.real)))
    ep, model = compile_model(fn, (x,))
    torch.testing.assert_close(model(x), ep.module()(x))


def test_ill_conditioned_complex_solve_matches_eager(compile_model):
    """A complex matrix with singular values from 1 to 1e-9 (complex128): LU's pivots equal
    eager's, the solve and det to eager's accuracy."""
    torch.manual_seed(20)
    d = torch.complex128
    q1, _ = L.qr(torch.randn(5, 5, dtype=d))
    q2, _ = L.qr(torch.randn(5, 5, dtype=d))
    a = q1 @ torch.diag(torch.tensor([1.0, 1e-2, 1e-4, 1e-6, 1e-9], dtype=d)) @ q2.mH
    b = torch.randn(5, 3, dtype=d)
    ep, model = compile_model(Fn(lambda a, b: (L.lu_factor(a), L.solve(a, b), L.det(a))), (a, b))
    got, want = model(a, b), ep.module()(a, b)
    torch.testing.assert_close(got[0][1], want[0][1])
    torch.testing.assert_close(got[0][0], want[0][0])
    torch.testing.assert_close(got[1], want[1], rtol=1e-5, atol=0)
    torch.testing.assert_close(got[2], want[2])
