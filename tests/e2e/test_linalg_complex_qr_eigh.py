"""Complex matrices on the shipped Householder QR and Hermitian eigen kernels against eager:
geqrf, linalg.qr (reduced, complete, r), qr, householder_product and ormqr (Q^H with
transpose, from the left and the right) equal to eager's (LAPACK's zgeqrf / zungqr / zunmqr
conventions), tall, wide, 1x1 and with zero columns; eigh (lower and upper triangle) and
eigvalsh of Hermitian matrices, the eigenvalues real, the eigenvectors equal up to a unit
phase each; complex64 and complex128, batched; numpy-only."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy_only import run_without_torch

import aotc
from models import Fn

L = torch.linalg
DTYPES = [torch.complex64, torch.complex128]


def qr_family(a, w, c):
    v, tau = torch.geqrf(a)
    return (L.qr(a), L.qr(a, mode="complete"), L.qr(a, mode="r"), L.qr(w),
            L.qr(w, mode="complete"), torch.qr(w, some=False), torch.geqrf(a), torch.geqrf(w),
            L.householder_product(v, tau), L.householder_product(v[..., :2], tau[..., :2]),
            torch.ormqr(v, tau, c), torch.ormqr(v, tau, c, transpose=True),
            torch.ormqr(v, tau, c.mT, left=False),
            torch.ormqr(v, tau, c.mT, left=False, transpose=True))


@pytest.mark.filterwarnings("ignore:torch.qr is deprecated")
@pytest.mark.parametrize("dtype", DTYPES)
def test_complex_householder_qr_matches_eager(compile_model, dtype):
    """The factors are LAPACK's, so Q, R, the reflectors and tau equal eager's, phases
    included. Zero below the diagonal: a complex alpha still reflects (to a real beta), a
    real one leaves H = I (tau = 0)."""
    torch.manual_seed(21)
    a, w, c = (torch.randn(3, 7, 4, dtype=dtype), torch.randn(3, 5, dtype=dtype),
               torch.randn(3, 7, 3, dtype=dtype))
    a[1, 1:, 0] = 0  # complex alpha over a zero column
    a[2, 1:, 0] = 0
    a[2, 0, 0] = 2.5  # real alpha over a zero column: H = I
    ep, model = compile_model(Fn(qr_family), (a, w, c))
    got, want = model(a, w, c), ep.module()(a, w, c)
    torch.testing.assert_close(got, want)
    assert got[6][1][2, 0] == 0 and got[6][1][1, 0] != 0  # tau of the identity reflector
    one = torch.randn(2, 1, 1, dtype=dtype)
    ep, model = compile_model(Fn(lambda x: (L.qr(x), torch.geqrf(x))), (one,), name="one.pt2")
    torch.testing.assert_close(model(one), ep.module()(one))


def aligned(got: torch.Tensor, want: torch.Tensor) -> torch.Tensor:
    """got's columns each times the unit phase that best aligns it with want's."""
    inner = (got.conj() * want).sum(-2, keepdim=True)
    return got * (inner / inner.abs())


@pytest.mark.parametrize("dtype", DTYPES)
def test_hermitian_eigen_matches_eager_up_to_the_vectors_phases(compile_model, dtype):
    torch.manual_seed(22)
    a = torch.randn(3, 6, 6, dtype=dtype)

    def fn(a):
        h = a + a.mH
        return (L.eigh(h), L.eigvalsh(h), L.eigh(a, UPLO="U"), L.eigvalsh(a, UPLO="U"),
                L.eigh(a[:, :1, :1]))
    ep, model = compile_model(Fn(fn), (a,))
    got, want = model(a), ep.module()(a)
    for k in (0, 2, 4):
        values, vectors = got[k]
        assert values.dtype == want[k][0].dtype == dtype.to_real()
        assert vectors.dtype == dtype
        torch.testing.assert_close(values, want[k][0])
        torch.testing.assert_close(aligned(vectors, want[k][1]), want[k][1])
        # aotc's phase: each vector's largest component real and positive
        big = vectors.gather(-2, vectors.abs().argmax(-2, keepdim=True))
        torch.testing.assert_close(big.imag, torch.zeros_like(big.imag))
        assert (big.real > 0).all()
    torch.testing.assert_close(got[1], want[1])
    torch.testing.assert_close(got[3], want[3])


def test_hermitian_eigen_of_repeated_eigenvalues_is_a_decomposition(compile_model):
    """Where eigenvectors are not unique they still diagonalize A, and are orthonormal."""
    q, _ = L.qr(torch.randn(5, 5, dtype=torch.complex128))
    d = torch.tensor([1.0, 1.0, 2.0, 4.0, 4.0], dtype=torch.float64)
    a = q @ torch.diag(d).to(q.dtype) @ q.mH
    ep, model = compile_model(Fn(lambda a: L.eigh(a)), (a,))
    values, vectors = model(a)
    torch.testing.assert_close(values, d)
    torch.testing.assert_close(vectors @ torch.diag(values).to(a.dtype) @ vectors.mH, a)
    torch.testing.assert_close(vectors.mH @ vectors, torch.eye(5, dtype=a.dtype))


def test_complex_qr_and_eigh_run_without_torch(tmp_path):
    torch.manual_seed(23)
    a = torch.randn(2, 5, 3, dtype=torch.complex64)
    h = torch.randn(4, 4, dtype=torch.complex64)
    h = h + h.mH
    ep = torch.export.export(Fn(lambda a, h: (*L.qr(a), L.eigvalsh(h))), (a, h))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "complex_qr.pt2")
    (outs,) = run_without_torch(path, [[a.numpy(), h.numpy()]], tmp_path / "run")
    for got, want in zip(outs, ep.module()(a, h)):
        assert got.dtype == want.numpy().dtype
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)
