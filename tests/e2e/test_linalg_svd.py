"""Singular value decomposition on the shipped kernel (kernels/linalg_svd.cpp) against eager:
linalg.svd (reduced and full), torch.svd, svdvals and what decomposes into it (matrix_rank,
the nuclear and spectral norms, cond, pinv), on tall, wide, square, 1x1 and batched
matrices, rank-deficient, zero and ill-conditioned ones. Singular vectors are defined up
to a common sign of each pair (and the completion of full_matrices up to its span), which
is how OpInfo compares them and how these tests do."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy_only import run_without_torch

import aotc
from models import Fn

L = torch.linalg


def same_up_to_signs(got, want):
    """(U, S, Vh) of aotc and eager: S equal, each singular pair equal up to its sign."""
    (u, s, vh), (eu, es, evh) = got, want
    torch.testing.assert_close(s, es)
    k = s.shape[-1]
    flip = torch.where((u[..., :k] * eu[..., :k]).sum(-2, keepdim=True) < 0, -1.0, 1.0)
    flip = flip.to(u.dtype)
    torch.testing.assert_close(u[..., :k] * flip, eu[..., :k])
    torch.testing.assert_close(vh[..., :k, :] * flip.mT, evh[..., :k, :])


def is_a_decomposition(a, u, s, vh):
    """U and Vh orthonormal (full: square), U diag(S) Vh = a."""
    k = s.shape[-1]
    eye = torch.eye(u.shape[-1], dtype=a.dtype)
    torch.testing.assert_close(u.mT @ u, eye.expand(u.shape[:-2] + eye.shape))
    eye = torch.eye(vh.shape[-2], dtype=a.dtype)
    torch.testing.assert_close(vh @ vh.mT, eye.expand(vh.shape[:-2] + eye.shape))
    torch.testing.assert_close((u[..., :k] * s.unsqueeze(-2)) @ vh[..., :k, :], a)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(2, 7, 4), (3, 5), (2, 3, 6, 6), (1, 1)])
def test_svd_matches_eager_up_to_signs(compile_model, dtype, shape):
    torch.manual_seed(5)
    a = torch.randn(*shape, dtype=dtype)
    fn = Fn(lambda a: (L.svd(a), L.svd(a, full_matrices=True), torch.svd(a), L.svdvals(a)))
    ep, model = compile_model(fn, (a,))
    got, want = model(a), ep.module()(a)
    same_up_to_signs(got[0], want[0])
    u, s, vh = got[1]
    torch.testing.assert_close(s, want[1][1])
    is_a_decomposition(a, u, s, vh)
    old_u, old_s, old_v = got[2]
    same_up_to_signs((old_u, old_s, old_v.mT), (want[2][0], want[2][1], want[2][2].mT))
    torch.testing.assert_close(got[3], want[3])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_what_decomposes_into_svd_matches_eager(compile_model, dtype):
    torch.manual_seed(6)
    a, w, sq = (torch.randn(3, 6, 4, dtype=dtype), torch.randn(4, 7, dtype=dtype),
                torch.randn(2, 5, 5, dtype=dtype))
    h = sq + sq.mT

    def fn(a, w, sq, h):
        return (L.matrix_rank(a), L.matrix_norm(a, "nuc"), L.matrix_norm(w, 2),
                L.matrix_norm(w, -2), L.cond(sq), L.cond(w), L.pinv(a), L.pinv(w),
                L.pinv(h, hermitian=True), L.pinv(a, atol=0.5), L.pinv(a, rtol=0.3),
                torch.pinverse(w), L.norm(sq[0], "nuc"))
    ep, model = compile_model(Fn(fn), (a, w, sq, h))
    rtol = 1e-4 if dtype == torch.float32 else None  # cond: a ratio of singular values
    torch.testing.assert_close(model(a, w, sq, h), ep.module()(a, w, sq, h), rtol=rtol,
                               atol=None if rtol is None else 1e-5)


def test_rank_deficient_zero_and_ill_conditioned_matrices(compile_model):
    """A rank-2 6x4 (two singular values at rounding level), the zero matrix (every singular
    vector a completion) and a matrix with singular values from 1 to 1e-9: the results
    still decompose their input, and a one-sided Jacobi keeps small singular values to
    their relative accuracy."""
    torch.manual_seed(7)
    d = torch.float64
    low = torch.randn(6, 2, dtype=d) @ torch.randn(2, 4, dtype=d)
    zero = torch.zeros(3, 5, dtype=d)
    q1, _ = L.qr(torch.randn(5, 5, dtype=d))
    q2, _ = L.qr(torch.randn(5, 5, dtype=d))
    sigma = torch.tensor([1.0, 1e-3, 1e-5, 1e-7, 1e-9], dtype=d)
    ill = q1 @ torch.diag(sigma) @ q2.T
    fn = Fn(lambda x, y, z: (L.svd(x, full_matrices=True), L.svd(y, full_matrices=True),
                             L.svd(z), L.matrix_rank(x), L.pinv(x)))
    ep, model = compile_model(fn, (low, zero, ill))
    got, want = model(low, zero, ill), ep.module()(low, zero, ill)
    for a, (u, s, vh) in zip((low, zero, ill), got[:3]):
        is_a_decomposition(a, u, s, vh)
    torch.testing.assert_close(got[0][1][:2], want[0][1][:2])
    assert (got[0][1][2:] < 1e-12).all()
    torch.testing.assert_close(got[1][1], torch.zeros(3, dtype=d))
    torch.testing.assert_close(got[2][1], sigma, rtol=1e-6, atol=0)
    assert int(got[3]) == 2 == int(want[3])
    torch.testing.assert_close(got[4], want[4])


def test_batched_svd_is_the_same_every_run(compile_model):
    torch.manual_seed(8)
    a = torch.randn(64, 8, 5)
    ep, model = compile_model(Fn(lambda a: L.svd(a)), (a,), options={"num_threads": 2})
    first = model(a)
    same_up_to_signs(first, ep.module()(a))
    for _ in range(10):
        assert all(torch.equal(x, y) for x, y in zip(model(a), first))


def test_svd_runs_without_torch(tmp_path):
    torch.manual_seed(9)
    a = torch.randn(3, 5, 4)
    fn = Fn(lambda a: (L.svdvals(a), L.pinv(a), L.matrix_norm(a, "nuc")))
    ep = torch.export.export(fn, (a,))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "svd.pt2")
    (outs,) = run_without_torch(path, [[a.numpy()]], tmp_path / "run")
    for got, want in zip(outs, ep.module()(a)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)
