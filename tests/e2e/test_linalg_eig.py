"""General (non-symmetric) eigen decomposition on the shipped kernel (kernels/linalg_eig.cpp)
against eager: linalg.eig and linalg.eigvals of float32 and float64 matrices, batched, on
odd, 1x1 and 2x2 sizes, with real eigenvalues only, purely imaginary pairs, repeated and
defective eigenvalues, a companion matrix and an ill-conditioned non-normal one; of
complex64 and complex128 matrices (batched, 1x1, Hermitian, triangular, 20x20, NaN and
0x0). The
eigenvalues of a general matrix have no defined order and each eigenvector is defined up to
a complex phase: results are compared with eager's after aotc's are reordered and rotated
onto them (tools/opsweep.py's gauge, as OpInfo compares them)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy_only import run_without_torch

import aotc
from aotc.tools.opsweep import GAUGES
from models import Fn

L = torch.linalg
gauge = GAUGES["linalg.eig"]


def eig_and_values(*mats):
    """linalg.eig's (values, vectors) and linalg.eigvals of each matrix, one flat tuple."""
    out = []
    for a in mats:
        w, v = L.eig(a)
        out += [w, v, L.eigvals(a)]
    return tuple(out)


def same_up_to_gauge(got, want, **tol):
    """Flat (values, vectors, eigvals) triples of aotc and eager: equal once aotc's order and
    phases are made eager's."""
    for k in range(0, len(want), 3):
        w, v = gauge((want[k], want[k + 1]), (got[k], got[k + 1]))
        torch.testing.assert_close((w, v), (want[k], want[k + 1]), **tol)
        torch.testing.assert_close(gauge(want[k + 2], got[k + 2]), want[k + 2], **tol)


def decomposes(a, w, v, tol):
    """A V = V diag(w), relative to the size of A, and every column of unit length."""
    a = a.to(v.dtype)
    residual = (a @ v - v * w.unsqueeze(-2)).abs().amax()
    assert residual <= tol * max(a.abs().amax().item(), 1.0), residual
    torch.testing.assert_close(L.vector_norm(v, dim=-2),
                               torch.ones(w.shape, dtype=w.real.dtype))


def largest_component_real(v):
    """Each column's largest component (the first of equal ones) real and positive."""
    big = v.abs().argmax(dim=-2, keepdim=True)
    top = v.gather(-2, big)
    assert (top.imag == 0).all() and (top.real > 0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_eig_matches_eager_up_to_gauge(compile_model, dtype):
    """Batched 7x7, an odd 5x5, 1x1 and a 2x2 with a complex pair (eager's output dtype:
    complex64 from float32, complex128 from float64)."""
    torch.manual_seed(0)
    a = torch.randn(3, 7, 7, dtype=dtype)
    b = torch.randn(5, 5, dtype=dtype)
    c = torch.randn(2, 1, 1, dtype=dtype)
    d = torch.tensor([[1.0, -2.0], [3.0, 0.5]], dtype=dtype)  # eigenvalues 0.75 +- 2.44i
    ep, model = compile_model(Fn(eig_and_values), (a, b, c, d))
    got, want = model(a, b, c, d), ep.module()(a, b, c, d)
    assert [g.dtype for g in got] == [w.dtype for w in want] == [dtype.to_complex()] * 12
    same_up_to_gauge(got, want)
    for k, m in enumerate((a, b, c, d)):
        w, v = got[3 * k], got[3 * k + 1]
        decomposes(m, w, v, 1e-5 if dtype == torch.float32 else 1e-12)
        largest_component_real(v)
        assert torch.equal(got[3 * k + 2], w)  # eigvals: the same values, bit for bit
    w = got[9]  # the pair: conjugates, the positive imaginary part first
    assert w[0].imag > 0 and w[1] == w[0].conj()
    torch.testing.assert_close(got[6], c.squeeze(-1).to(dtype.to_complex()))  # 1x1


def orthogonal(n, seed):
    q, _ = L.qr(torch.randn(n, n, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)))
    return q


def test_special_matrices(compile_model):
    """Real eigenvalues only (a similarity of a diagonal), purely imaginary pairs (a rotation
    generator in a rotated basis), a companion matrix of a known polynomial, and an
    ill-conditioned non-normal matrix (large off-diagonal coupling, eigenvalue condition
    numbers ~1e4): values and vectors as eager's up to the gauge."""
    d = torch.float64
    s = torch.randn(6, 6, dtype=d, generator=torch.Generator().manual_seed(1)) + 3 * torch.eye(6, dtype=d)
    real = s @ torch.diag(torch.tensor([-3.0, -1.0, 0.5, 2.0, 4.0, 7.0], dtype=d)) @ L.inv(s)
    q = orthogonal(6, 2)
    blocks = torch.zeros(6, 6, dtype=d)
    for k, freq in enumerate((1.0, 2.5, 4.0)):
        blocks[2 * k, 2 * k + 1], blocks[2 * k + 1, 2 * k] = -freq, freq
    rotation = q @ blocks @ q.T
    roots = torch.tensor([1.0, -2.0, 3.0, 0.5, -1.5], dtype=d)  # (x - 1)(x + 2)...
    coeffs = torch.tensor(np.poly(roots.numpy()), dtype=d)
    companion = torch.diag(torch.ones(4, dtype=d), -1)
    companion[0] = -coeffs[1:]
    t = torch.triu(torch.randn(7, 7, dtype=d, generator=torch.Generator().manual_seed(3)), 1)
    triangular = torch.diag(torch.arange(1.0, 8.0, dtype=d)) + 30 * t
    p = orthogonal(7, 4)
    nonnormal = p @ triangular @ p.T
    mats = (real, rotation, companion, triangular, nonnormal)
    ep, model = compile_model(Fn(eig_and_values), mats)
    got, want = model(*mats), ep.module()(*mats)
    same_up_to_gauge(got[:9], want[:9])
    for k, m in enumerate(mats):
        decomposes(m, got[3 * k], got[3 * k + 1], 1e-12)
    values = got[0]
    torch.testing.assert_close(values.imag, torch.zeros(6, dtype=d))
    torch.testing.assert_close(values.real.sort().values,
                               torch.tensor([-3.0, -1.0, 0.5, 2.0, 4.0, 7.0], dtype=d))
    spin = got[3]  # purely imaginary, pairs in order: +i f then -i f
    torch.testing.assert_close(spin.real, torch.zeros(6, dtype=d), atol=1e-13, rtol=0)
    assert (spin.imag[0::2] > 0).all() and torch.equal(spin[1::2], spin[0::2].conj())
    torch.testing.assert_close(spin.imag.abs().sort().values,
                               torch.tensor([1.0, 1.0, 2.5, 2.5, 4.0, 4.0], dtype=d))
    torch.testing.assert_close(got[6].real.sort().values, roots.sort().values)
    torch.testing.assert_close(got[6].imag, torch.zeros(5, dtype=d), atol=1e-12, rtol=0)
    # triangular: its eigenvalues are its diagonal, exactly; in a rotated basis they are
    # ill-conditioned, so as accurate as eager's (both ~1e-10 off), not equal to them
    exact = torch.arange(1.0, 8.0, dtype=d).to(torch.complex128)
    torch.testing.assert_close(gauge(exact, got[9]), exact, atol=0, rtol=0)
    w, v = gauge((want[9], want[10]), (got[9], got[10]))
    torch.testing.assert_close((w, v), (want[9], want[10]))
    ours, eagers = gauge(exact, got[12]), gauge(exact, want[12])
    assert (ours - exact).abs().amax() <= 10 * (eagers - exact).abs().amax() + 1e-12
    w, v = gauge((want[12], want[13]), (got[12], got[13]))
    torch.testing.assert_close((w, v), (want[12], want[13]), atol=1e-7, rtol=1e-7)


def test_repeated_and_defective_eigenvalues(compile_model):
    """A diagonalizable matrix with a repeated eigenvalue, and defective ones (a Jordan block,
    in a rotated basis, and as it is): the eigenvectors of a repeated eigenvalue are not
    unique (of a defective one ill-determined), so these are checked to decompose A, the
    values against eager's loosely (a defective eigenvalue moves by ~eps^(1/k))."""
    d = torch.float64
    q = orthogonal(5, 4)
    repeated = q @ torch.diag(torch.tensor([2.0, 2.0, 2.0, -1.0, 3.0], dtype=d)) @ q.T
    jordan = 3 * torch.eye(4, dtype=d) + torch.diag(torch.ones(3, dtype=d), 1)
    p = orthogonal(4, 5)
    rotated = p @ jordan @ p.T
    mats = (repeated, jordan, rotated)
    ep, model = compile_model(Fn(eig_and_values), mats)
    got, want = model(*mats), ep.module()(*mats)
    for k, m in enumerate(mats):
        w, v = got[3 * k], got[3 * k + 1]
        assert torch.isfinite(w).all() and torch.isfinite(v).all()
        decomposes(m, w, v, 1e-10)
        largest_component_real(v)
        ordered = gauge(want[3 * k + 2], got[3 * k + 2])
        torch.testing.assert_close(ordered, want[3 * k + 2], atol=1e-3, rtol=0)
    torch.testing.assert_close(got[0].real.sort().values,
                               torch.tensor([-1.0, 2.0, 2.0, 2.0, 3.0], dtype=d))
    torch.testing.assert_close(got[3], torch.full((4,), 3.0, dtype=torch.complex128),
                               atol=0, rtol=0)  # already triangular: exact
    # every eigenvector of the Jordan block is e1 (up to rounding)
    torch.testing.assert_close(got[4][0].abs(), torch.ones(4, dtype=d))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_random_20x20_decomposes(compile_model, dtype):
    torch.manual_seed(6)
    a = torch.randn(2, 20, 20, dtype=dtype)
    ep, model = compile_model(Fn(lambda a: L.eig(a)), (a,))
    w, v = model(a)
    decomposes(a.to(torch.float64), w.to(torch.complex128), v.to(torch.complex128),
               1e-5 if dtype == torch.float32 else 1e-12)
    want = ep.module()(a)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32 else {}
    torch.testing.assert_close(gauge(want, (w, v)), want, **tol)


def test_nan_and_inf_give_nan_and_empty_matrices(compile_model):
    """A matrix with a NaN or an infinity: NaN values and vectors (eager refuses it), the
    other matrices of the batch unharmed; 0x0 matrices give empty results."""
    a = torch.randn(3, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    a[0, 1, 2] = float("nan")
    a[2, 3, 0] = float("inf")
    e = torch.zeros(2, 0, 0)
    ep, model = compile_model(Fn(lambda a, e: (L.eig(a), L.eigvals(a), L.eig(e))), (a, e))
    (w, v), values, (ew, ev) = model(a, e)
    assert w[[0, 2]].isnan().all() and v[[0, 2]].isnan().all() and values[[0, 2]].isnan().all()
    want = L.eig(a[1])
    torch.testing.assert_close(gauge(want, (w[1], v[1])), want)
    assert ew.shape == (2, 0) and ev.shape == (2, 0, 0) and ew.dtype == torch.complex64


COMPLEX = [torch.complex64, torch.complex128]


def complex_tol(dtype):
    """The A V = V diag(w) residual bound, relative to the size of A."""
    return 1e-5 if dtype == torch.complex64 else 1e-12


@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_eig_matches_eager_up_to_gauge(compile_model, dtype):
    """Complex input (the complex kernel: Hessenberg reduction and single-shift QR to the
    triangular Schur form): batched 6x6, 1x1, a Hermitian matrix (real eigenvalues) and an
    upper triangular one (its diagonal the eigenvalues, exactly), in eager's dtype."""
    g = torch.Generator().manual_seed(10)
    a = torch.randn(3, 6, 6, dtype=dtype, generator=g)
    c = torch.randn(2, 1, 1, dtype=dtype, generator=g)
    h = torch.randn(5, 5, dtype=dtype, generator=g)
    h = h + h.mH
    t = torch.triu(torch.randn(5, 5, dtype=dtype, generator=g))
    mats = (a, c, h, t)
    ep, model = compile_model(Fn(eig_and_values), mats)
    got, want = model(*mats), ep.module()(*mats)
    assert [g.dtype for g in got] == [w.dtype for w in want] == [dtype] * 12
    tol = {} if dtype == torch.complex128 else {"rtol": 1e-4, "atol": 1e-4}
    same_up_to_gauge(got, want, **tol)
    for k, m in enumerate(mats):
        w, v = got[3 * k], got[3 * k + 1]
        decomposes(m.to(torch.complex128), w.to(torch.complex128), v.to(torch.complex128),
                   complex_tol(dtype))
        largest_component_real(v)
        assert torch.equal(got[3 * k + 2], w)  # eigvals: the same values, bit for bit
    torch.testing.assert_close(got[3], c.squeeze(-1), atol=0, rtol=0)  # 1x1: exact
    assert torch.equal(got[4], torch.ones(2, 1, 1, dtype=dtype))
    scale = h.abs().amax().item()
    assert got[6].imag.abs().amax() <= 10 * torch.finfo(dtype).eps * scale  # Hermitian: real
    torch.testing.assert_close(got[9], torch.diagonal(t), atol=0, rtol=0)  # in order, exact


@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_random_20x20_decomposes(compile_model, dtype):
    g = torch.Generator().manual_seed(11)
    a = torch.randn(2, 20, 20, dtype=dtype, generator=g)
    ep, model = compile_model(Fn(lambda a: (L.eig(a), L.eigvals(a))), (a,))
    (w, v), values = model(a)
    decomposes(a.to(torch.complex128), w.to(torch.complex128), v.to(torch.complex128),
               complex_tol(dtype))
    largest_component_real(v)
    assert torch.equal(values, w)
    want = ep.module()(a)[0]
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == torch.complex64 else {}
    torch.testing.assert_close(gauge(want, (w, v)), want, **tol)


def test_complex_nan_and_empty_matrices(compile_model):
    """A complex matrix with a NaN (in its imaginary part) or an infinity gives NaN, the
    rest of the batch unharmed; 0x0 complex matrices give empty results."""
    g = torch.Generator().manual_seed(12)
    a = torch.randn(3, 4, 4, dtype=torch.complex128, generator=g)
    a[0, 1, 2] = complex(0.0, float("nan"))
    a[2, 3, 0] = complex(float("inf"), 0.0)
    e = torch.zeros(2, 0, 0, dtype=torch.complex64)
    ep, model = compile_model(Fn(lambda a, e: (L.eig(a), L.eigvals(a), L.eig(e))), (a, e))
    (w, v), values, (ew, ev) = model(a, e)
    assert w[[0, 2]].isnan().all() and v[[0, 2]].isnan().all() and values[[0, 2]].isnan().all()
    want = L.eig(a[1])
    torch.testing.assert_close(gauge(want, (w[1], v[1])), want)
    assert ew.shape == (2, 0) and ev.shape == (2, 0, 0) and ew.dtype == torch.complex64


def test_batched_eig_is_the_same_every_run(compile_model):
    torch.manual_seed(8)
    a = torch.randn(64, 9, 9)
    ep, model = compile_model(Fn(lambda a: L.eig(a)), (a,), options={"num_threads": 2})
    first = model(a)
    want = ep.module()(a)
    torch.testing.assert_close(gauge(want, first), want, rtol=1e-4, atol=1e-4)
    for _ in range(10):
        assert all(torch.equal(x, y) for x, y in zip(model(a), first))


def test_eig_runs_without_torch(tmp_path):
    torch.manual_seed(9)
    a = torch.randn(3, 5, 5)
    fn = Fn(lambda a: (*L.eig(a), L.eigvals(a)))
    ep = torch.export.export(fn, (a,))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "eig.pt2")
    (outs,) = run_without_torch(path, [[a.numpy()]], tmp_path / "run")
    assert [o.dtype for o in outs] == [np.complex64] * 3
    w, v, values = (torch.from_numpy(o) for o in outs)
    want = ep.module()(a)
    torch.testing.assert_close(gauge((want[0], want[1]), (w, v)), (want[0], want[1]),
                               rtol=1e-4, atol=1e-4)
    assert torch.equal(values, w)
