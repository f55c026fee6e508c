"""Dense linear algebra on the shipped kernels (kernels/linalg.cpp) against eager: LU,
Cholesky, triangular solves, Householder QR, symmetric eigen and what is built on them,
batched, broadcast, on odd and 1x1 sizes, rectangular LU, ill-conditioned and singular
matrices; a singular input to an op that eager refuses is an InputError at run time, and the
model keeps working after it."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy_only import run_without_torch

import aotc
from models import Fn

L = torch.linalg
Dim = torch.export.Dim


def spd(a: torch.Tensor) -> torch.Tensor:
    """A well-conditioned symmetric positive-definite matrix from any square a."""
    n = a.shape[-1]
    return a @ a.mT + n * torch.eye(n, dtype=a.dtype)


def lu_family(a, b, v):
    lu, piv = L.lu_factor(a)
    return (L.inv(a), L.solve(a, b), L.solve(a, v), L.solve(a, b.mT, left=False),
            L.det(a), L.slogdet(a), torch.logdet(spd(a)), lu, piv, L.lu(a),
            torch.lu_unpack(lu, piv), L.lu_solve(lu, piv, b),
            L.lu_solve(lu, piv, b, adjoint=True), L.lu_solve(lu, piv, b.mT, left=False),
            L.matrix_power(a, -3))


def cholesky_family(a, b):
    s = spd(a)
    c, cu = L.cholesky(s), L.cholesky(s, upper=True)
    return (c, cu, L.cholesky_ex(s), torch.cholesky_solve(b, c),
            torch.cholesky_solve(b, cu, upper=True), torch.cholesky_inverse(c),
            torch.cholesky_inverse(cu, upper=True),
            L.solve_triangular(a, b, upper=True), L.solve_triangular(a, b, upper=False),
            L.solve_triangular(a, b.mT, upper=True, left=False),
            L.solve_triangular(a, b, upper=False, unitriangular=True),
            torch.triangular_solve(b, a, upper=False, transpose=True))


def diagonal_heavy(a):
    """A matrix whose triangular solves stay well conditioned."""
    return a + a.shape[-1] * torch.eye(a.shape[-1], dtype=a.dtype)


# (batch, n, right-hand sides)
SHAPES = [((), 1, 1), ((), 7, 3), ((2, 3), 5, 2), ((1,), 13, 4), ((64,), 4, 1)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch,n,k", SHAPES)
def test_lu_and_cholesky_families_match_eager(compile_model, dtype, batch, n, k):
    torch.manual_seed(n)
    a = diagonal_heavy(torch.randn(*batch, n, n, dtype=dtype))
    b = torch.randn(*batch, n, k, dtype=dtype)
    v = torch.randn(*batch, n, dtype=dtype)
    fn = Fn(lambda a, b, v: (lu_family(a, b, v), cholesky_family(a, b)))
    ep, model = compile_model(fn, (a, b, v))
    torch.testing.assert_close(model(a, b, v), ep.module()(a, b, v))


def test_rectangular_lu_and_broadcast_batches(compile_model):
    torch.manual_seed(0)
    tall, wide = torch.randn(2, 6, 3), torch.randn(2, 3, 5)
    a, b = diagonal_heavy(torch.randn(3, 1, 4, 4)), torch.randn(2, 4, 3)

    def fn(tall, wide, a, b):
        return (L.lu_factor(tall), L.lu(tall), L.lu(wide), L.solve(a, b),
                L.solve_triangular(a, b, upper=True))
    ep, model = compile_model(Fn(fn), (tall, wide, a, b))
    torch.testing.assert_close(model(tall, wide, a, b), ep.module()(tall, wide, a, b))


def test_ill_conditioned_and_singular_matrices(compile_model):
    """A Hilbert matrix in float64 (condition ~1e10); a singular matrix's det is 0 and its
    slogdet (0, -inf); a zero pivot leaves LU's info set, as LAPACK's."""
    n = 8
    i = torch.arange(n, dtype=torch.float64)
    hilbert = 1 / (i[:, None] + i[None, :] + 1)
    # a zero row, and multipliers that are powers of 2 whether a LAPACK factors it or its
    # transpose: every path's pivot is exactly 0 (with rows [1, 2, 3] and [2, 4, 6], eager's
    # det factors the transpose with multipliers 1/3 and 2/3 on some CPUs and gets -7e-16)
    singular = torch.tensor([[1.0, 2.0, 4.0], [0.0, 0.0, 0.0], [2.0, 1.0, 1.0]],
                            dtype=torch.float64)
    rhs = torch.ones(n, 1, dtype=torch.float64)

    def fn(h, s, r):
        return L.solve(h, r), L.det(h), L.slogdet(s), L.det(s), L.lu_factor_ex(s), L.inv_ex(s)[1]
    ep, model = compile_model(Fn(fn), (hilbert, singular, rhs))
    got, want = model(hilbert, singular, rhs), ep.module()(hilbert, singular, rhs)
    torch.testing.assert_close(got, want)
    assert got[2][0].item() == 0 and got[2][1].item() == float("-inf")
    assert got[4][2].item() != 0 and got[5].item() != 0


def test_singular_input_is_an_input_error_and_the_model_goes_on(compile_model):
    batch = Dim("batch", max=8)
    a = torch.randn(2, 3, 3) + 3 * torch.eye(3)
    b = torch.randn(2, 3, 2)
    ep, model = compile_model(Fn(lambda a, b: (L.inv(a), L.solve(a, b), L.cholesky(spd(a)))),
                              (a, b), dynamic_shapes={"xs": ({0: batch}, {0: batch})})
    bad = a.clone()
    bad[1] = 0
    with pytest.raises(aotc.InputError, match=r"linalg\.inv: the input matrix is singular"):
        model(bad, b)
    for batch in (1, 5):
        x, y = torch.randn(batch, 3, 3) + 3 * torch.eye(3), torch.randn(batch, 3, 2)
        torch.testing.assert_close(model(x, y), ep.module()(x, y))


def test_cholesky_of_a_matrix_that_is_not_positive_definite(compile_model):
    a = spd(torch.randn(4, 4))
    ep, model = compile_model(Fn(lambda a: (L.cholesky_ex(a), L.cholesky(a))), (a,))
    torch.testing.assert_close(model(a), ep.module()(a))
    bad = a.clone()
    bad[2, 2] = -1.0
    with pytest.raises(aotc.InputError, match="not positive-definite"):
        model(bad)


def test_large_batched_solve_is_the_same_every_run(compile_model):
    torch.manual_seed(1)
    a = diagonal_heavy(torch.randn(256, 6, 6))
    b = torch.randn(256, 6, 2)
    ep, model = compile_model(Fn(lambda a, b: (L.solve(a, b), L.inv(a[0] * 0 + a[:64].sum(0)))),
                              (a, b), options={"num_threads": 2})
    first = model(a, b)
    torch.testing.assert_close(first, ep.module()(a, b))
    for _ in range(10):
        assert all(torch.equal(x, y) for x, y in zip(model(a, b), first))


def test_runs_without_torch(tmp_path):
    torch.manual_seed(2)
    a = diagonal_heavy(torch.randn(3, 5, 5))
    b = torch.randn(3, 5, 2)
    fn = Fn(lambda a, b: (L.solve(a, b), L.det(a), L.cholesky(spd(a)),
                          L.solve_triangular(a, b, upper=True)))
    ep = torch.export.export(fn, (a, b))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "linalg.pt2")
    (outs,) = run_without_torch(path, [[a.numpy(), b.numpy()]], tmp_path / "run")
    for got, want in zip(outs, ep.module()(a, b)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


def qr_family(a, w, c):
    v, tau = torch.geqrf(a)
    return (L.qr(a), L.qr(a, mode="complete"), L.qr(a, mode="r"), L.qr(w),
            L.qr(w, mode="complete"), torch.geqrf(a), L.householder_product(v, tau),
            torch.ormqr(v, tau, c), torch.ormqr(v, tau, c, transpose=True),
            torch.ormqr(v, tau, c.mT, left=False),
            torch.ormqr(v, tau, c.mT, left=False, transpose=True))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_householder_qr_matches_eager(compile_model, dtype):
    """Tall, wide, 1x1 and a column of zeros (a reflector that is the identity): the
    factors are LAPACK's, so Q and R equal eager's, signs included."""
    torch.manual_seed(3)
    a, w, c = (torch.randn(2, 7, 4, dtype=dtype), torch.randn(3, 5, dtype=dtype),
               torch.randn(2, 7, 3, dtype=dtype))
    a[1, 1:, 0] = 0
    ep, model = compile_model(Fn(qr_family), (a, w, c))
    torch.testing.assert_close(model(a, w, c), ep.module()(a, w, c))
    one = torch.randn(1, 1, dtype=dtype)
    ep, model = compile_model(Fn(lambda x: (L.qr(x), torch.geqrf(x))), (one,), name="one.pt2")
    torch.testing.assert_close(model(one), ep.module()(one))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_symmetric_eigen_matches_eager_up_to_the_vectors_signs(compile_model, dtype):
    torch.manual_seed(4)
    a = torch.randn(3, 9, 9, dtype=dtype)

    def fn(a):
        s = a + a.mT
        return L.eigh(s), L.eigvalsh(s), L.eigh(a, UPLO="U"), L.eigvalsh(torch.eye(1) + a[:, :1, :1])
    ep, model = compile_model(Fn(fn), (a,))
    got, want = model(a), ep.module()(a)
    for k in (0, 2):
        torch.testing.assert_close(got[k][0], want[k][0])
        flip = torch.where((got[k][1] * want[k][1]).sum(-2, keepdim=True) < 0, -1.0, 1.0)
        torch.testing.assert_close(got[k][1] * flip.to(dtype), want[k][1])
    torch.testing.assert_close(got[1], want[1])
    torch.testing.assert_close(got[3], want[3])


def test_symmetric_eigen_of_repeated_eigenvalues_is_a_decomposition(compile_model):
    """Where eigenvectors are not unique (a repeated eigenvalue) they still diagonalize A."""
    q, _ = torch.linalg.qr(torch.randn(6, 6, dtype=torch.float64))
    a = q @ torch.diag(torch.tensor([1.0, 1.0, 1.0, 2.0, 5.0, 5.0], dtype=torch.float64)) @ q.T
    ep, model = compile_model(Fn(lambda a: L.eigh(a)), (a,))
    values, vectors = model(a)
    torch.testing.assert_close(values, ep.module()(a)[0])
    torch.testing.assert_close(vectors @ torch.diag(values) @ vectors.T, a)
    torch.testing.assert_close(vectors.T @ vectors, torch.eye(6, dtype=torch.float64))
