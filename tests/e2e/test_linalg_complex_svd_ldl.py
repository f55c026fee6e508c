"""Complex matrices on the shipped SVD and LDL kernels against eager, complex64 and
complex128: linalg.svd (reduced and full), torch.svd and svdvals of tall, wide, square,
1x1 and batched matrices, singular vectors up to a unit phase of each pair (the completion
of full_matrices up to its span); rank-deficient and zero matrices still decompose; what
decomposes into the SVD (pinv, matrix_norm, norm, cond, matrix_rank); LDL of complex
symmetric and of Hermitian matrices with 2x2 pivots (a weak diagonal), its solves;
numpy-only."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy_only import run_without_torch

import aotc
from models import Fn

L = torch.linalg
DTYPES = [torch.complex64, torch.complex128]


def same_up_to_phases(got, want):
    """(U, S, Vh) of aotc and eager: S equal and real, each singular pair equal up to one
    unit phase (U's columns and Vh's rows)."""
    (u, s, vh), (eu, es, evh) = got, want
    assert s.dtype == es.dtype and not s.is_complex()
    torch.testing.assert_close(s, es)
    k = s.shape[-1]
    inner = (u[..., :k].conj() * eu[..., :k]).sum(-2, keepdim=True)  # <u_j, eager u_j>
    phase = inner / inner.abs()
    torch.testing.assert_close(u[..., :k] * phase, eu[..., :k])
    torch.testing.assert_close(vh[..., :k, :] * phase.mT.conj(), evh[..., :k, :])


def is_a_decomposition(a, u, s, vh):
    """U and Vh with orthonormal columns / rows (full: unitary), U diag(S) Vh = a."""
    k = s.shape[-1]
    eye = torch.eye(u.shape[-1], dtype=a.dtype)
    torch.testing.assert_close(u.mH @ u, eye.expand(u.shape[:-2] + eye.shape))
    eye = torch.eye(vh.shape[-2], dtype=a.dtype)
    torch.testing.assert_close(vh @ vh.mH, eye.expand(vh.shape[:-2] + eye.shape))
    torch.testing.assert_close((u[..., :k] * s.unsqueeze(-2).to(a.dtype)) @ vh[..., :k, :], a)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 7, 4), (3, 5), (2, 3, 6, 6), (1, 1)])
def test_complex_svd_matches_eager_up_to_phases(compile_model, dtype, shape):
    torch.manual_seed(21)
    a = torch.randn(*shape, dtype=dtype)
    fn = Fn(lambda a: (L.svd(a), L.svd(a, full_matrices=True), torch.svd(a), L.svdvals(a)))
    ep, model = compile_model(fn, (a,))
    got, want = model(a), ep.module()(a)
    same_up_to_phases(got[0], want[0])
    u, s, vh = got[1]
    torch.testing.assert_close(s, want[1][1])
    is_a_decomposition(a, u, s, vh)
    old_u, old_s, old_v = got[2]
    same_up_to_phases((old_u, old_s, old_v.mH), (want[2][0], want[2][1], want[2][2].mH))
    assert got[3].dtype == want[3].dtype
    torch.testing.assert_close(got[3], want[3])


@pytest.mark.parametrize("dtype", DTYPES)
def test_what_decomposes_into_complex_svd_matches_eager(compile_model, dtype):
    torch.manual_seed(22)
    a, w, sq = (torch.randn(3, 6, 4, dtype=dtype), torch.randn(4, 7, dtype=dtype),
                torch.randn(2, 5, 5, dtype=dtype))

    def fn(a, w, sq):
        return (L.matrix_rank(a), L.matrix_norm(a, "nuc"), L.matrix_norm(w, 2),
                L.matrix_norm(w, -2), L.cond(sq), L.cond(w), L.cond(sq, -2), L.pinv(a),
                L.pinv(w), L.pinv(a, atol=0.5), L.pinv(a, rtol=0.3), torch.pinverse(w),
                L.norm(sq[0], "nuc"), L.norm(w, 2), L.svdvals(w))
    ep, model = compile_model(Fn(fn), (a, w, sq))
    got, want = model(a, w, sq), ep.module()(a, w, sq)
    assert [g.dtype for g in got] == [e.dtype for e in want]
    rtol = 1e-4 if dtype == torch.complex64 else None  # cond: a ratio of singular values
    torch.testing.assert_close(got, want, rtol=rtol, atol=None if rtol is None else 1e-5)


def test_rank_deficient_and_zero_complex_matrices(compile_model):
    """A complex rank-2 6x4 and its 4x6 adjoint (two singular values at rounding level, their
    left vectors completed), the zero matrix (every singular vector a completion): the
    results decompose their input, and rank and pinv agree with eager."""
    torch.manual_seed(23)
    d = torch.complex128
    low = torch.randn(6, 2, dtype=d) @ torch.randn(2, 4, dtype=d)
    zero = torch.zeros(3, 5, dtype=d)
    fn = Fn(lambda x, z: (L.svd(x, full_matrices=True), L.svd(x.mH, full_matrices=True),
                          L.svd(z, full_matrices=True), L.svd(x), L.matrix_rank(x), L.pinv(x)))
    ep, model = compile_model(fn, (low, zero))
    got, want = model(low, zero), ep.module()(low, zero)
    for a, (u, s, vh) in zip((low, low.mH, zero, low), got[:4]):
        is_a_decomposition(a, u, s, vh)
    torch.testing.assert_close(got[0][1][:2], want[0][1][:2])
    assert (got[0][1][2:] < 1e-12).all()
    torch.testing.assert_close(got[2][1], torch.zeros(3, dtype=torch.float64))
    assert int(got[4]) == 2 == int(want[4])
    torch.testing.assert_close(got[5], want[5])


def weak_diagonal(a: torch.Tensor) -> torch.Tensor:
    """a with its diagonal scaled down, so Bunch-Kaufman takes 2x2 pivots."""
    return a - (1 - 1e-2) * torch.diag_embed(a.diagonal(dim1=-2, dim2=-1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_complex_ldl_matches_eager(compile_model, dtype):
    """Complex symmetric (hermitian=False) and Hermitian LDL: LD and pivots as eager's, with
    2x2 pivots and a 1x1 matrix; the solves (hermitian or not, broadcast over the batch)."""
    torch.manual_seed(24)
    a = torch.randn(4, 6, 6, dtype=dtype)
    sym, herm = weak_diagonal(a + a.mT), weak_diagonal(a + a.mH)
    b = torch.randn(6, 3, dtype=dtype)
    one = torch.randn(1, 1, dtype=dtype)

    def fn(sym, herm, b, one):
        ld, piv, info = L.ldl_factor_ex(sym)
        hld, hpiv, hinfo = L.ldl_factor_ex(herm, hermitian=True)
        return (ld, piv, info, hld, hpiv, hinfo, L.ldl_factor(herm, hermitian=True),
                L.ldl_solve(ld, piv, b), L.ldl_solve(hld, hpiv, b, hermitian=True),
                L.ldl_factor(one), L.ldl_factor(one + one.conj(), hermitian=True))
    ep, model = compile_model(Fn(fn), (sym, herm, b, one))
    got, want = model(sym, herm, b, one), ep.module()(sym, herm, b, one)
    assert (want[1] < 0).any() and (want[4] < 0).any()  # 2x2 pivots taken
    for i in (1, 2, 4, 5):
        assert torch.equal(got[i], want[i])
    torch.testing.assert_close(got, want, rtol=1e-4 if dtype == torch.complex64 else None,
                               atol=1e-4 if dtype == torch.complex64 else None)
    torch.testing.assert_close(sym @ got[7], b.expand(4, 6, 3), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(herm @ got[8], b.expand(4, 6, 3), rtol=1e-4, atol=1e-4)


def test_complex_svd_and_ldl_run_without_torch(tmp_path):
    torch.manual_seed(25)
    a = torch.randn(3, 5, 4, dtype=torch.complex64)
    s = torch.randn(2, 4, 4, dtype=torch.complex64)
    h, b = weak_diagonal(s + s.mH), torch.randn(2, 4, 2, dtype=torch.complex64)

    def fn(a, h, b):
        ld, piv = L.ldl_factor(h, hermitian=True)
        return (L.svdvals(a), L.pinv(a), L.matrix_norm(a, "nuc"), ld, piv,
                L.ldl_solve(ld, piv, b, hermitian=True))
    ep = torch.export.export(Fn(fn), (a, h, b))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "csvd.pt2")
    (outs,) = run_without_torch(path, [[a.numpy(), h.numpy(), b.numpy()]], tmp_path / "run")
    for got, want in zip(outs, ep.module()(a, h, b)):
        assert got.dtype == want.numpy().dtype
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)
