"""The matrix exponential on the shipped kernel (kernels/linalg_expm.cpp) against eager:
batched, 1x1, zero, nilpotent (an exact finite series), large norms (many squarings), a
NaN input, and numpy-only."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from numpy_only import run_without_torch

import aotc
from models import Fn

L = torch.linalg


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matrix_exp_matches_eager(compile_model, dtype):
    torch.manual_seed(10)
    small, big, one = (0.1 * torch.randn(3, 5, 5, dtype=dtype),
                       3 * torch.randn(2, 7, 7, dtype=dtype), torch.randn(1, 1, dtype=dtype))
    fn = Fn(lambda a, b, c: (L.matrix_exp(a), torch.matrix_exp(b), L.matrix_exp(c),
                             L.matrix_exp(a * 0)))
    ep, model = compile_model(fn, (small, big, one))
    got, want = model(small, big, one), ep.module()(small, big, one)
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(got[2:], want[2:])
    # a norm near 20: float32 eager loses digits in its squarings, aotc squares in double,
    # so it is held to a float64 evaluation, no less accurate than eager
    exact = torch.matrix_exp(big.double())
    error = ((got[1].double() - exact).abs().max(), (want[1].double() - exact).abs().max())
    assert error[0] <= error[1] + 1e-12, error
    torch.testing.assert_close(got[1], want[1], rtol=1e-4, atol=1e-4)


def test_matrix_exp_of_nilpotent_large_and_nan_matrices(compile_model):
    d = torch.float64
    torch.manual_seed(11)
    nil = torch.triu(torch.randn(4, 4, dtype=d), 1) * 10
    exact = sum(torch.linalg.matrix_power(nil, k) / float(math.factorial(k))
                for k in range(4))
    large = torch.randn(6, 6, dtype=d) * 20  # a 1-norm near 400: ten squarings
    nan = torch.eye(3, dtype=d)
    nan[1, 2] = float("nan")
    ep, model = compile_model(Fn(lambda a, b, c: (L.matrix_exp(a), L.matrix_exp(b),
                                                   L.matrix_exp(c))), (nil, large, nan))
    got = model(nil, large, nan)
    want = ep.module()(nil, large, nan)
    torch.testing.assert_close(got[0], exact)
    torch.testing.assert_close(got[1], want[1])
    assert got[2].isnan().all()


def test_matrix_exp_runs_without_torch(tmp_path):
    torch.manual_seed(12)
    a = torch.randn(4, 3, 3)
    ep = torch.export.export(Fn(lambda a: L.matrix_exp(a)), (a,))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "expm.pt2")
    (outs,) = run_without_torch(path, [[a.numpy()]], tmp_path / "run")
    np.testing.assert_allclose(outs[0], ep.module()(a).numpy(), rtol=1e-5, atol=1e-5)
