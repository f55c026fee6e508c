"""Special functions against eager over wide ranges: small and large arguments (series and
asymptotic branches), negatives, zeros, poles and infinities."""
from __future__ import annotations

import pytest
import torch

S = torch.special
UNARY = {
    "erfc": torch.erfc, "lgamma": torch.lgamma, "digamma": torch.digamma, "i0": torch.i0,
    "i0e": S.i0e, "i1": S.i1, "i1e": S.i1e, "modified_bessel_i0": S.modified_bessel_i0,
    "modified_bessel_i1": S.modified_bessel_i1, "modified_bessel_k0": S.modified_bessel_k0,
    "modified_bessel_k1": S.modified_bessel_k1,
    "scaled_modified_bessel_k0": S.scaled_modified_bessel_k0,
    "scaled_modified_bessel_k1": S.scaled_modified_bessel_k1, "bessel_j0": S.bessel_j0,
    "bessel_j1": S.bessel_j1, "bessel_y0": S.bessel_y0, "bessel_y1": S.bessel_y1,
    "spherical_bessel_j0": S.spherical_bessel_j0, "erfcx": S.erfcx, "log_ndtr": S.log_ndtr,
    "ndtr": S.ndtr,
    "airy_ai": S.airy_ai,
}


class Special(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def _points():
    g = torch.Generator().manual_seed(0)
    wide = torch.linspace(-60, 60, 481)
    return torch.cat([wide, torch.randn(64, generator=g) * 3, torch.tensor(
        [0.0, -0.0, 1e-6, -1e-6, 0.5, 1.0, 2.0, -2.0, 9.99, 10.01, 24.9, 25.1, 30.0, 88.0,
         float("inf"), float("-inf"), float("nan")])])


@pytest.mark.parametrize("name", sorted(UNARY))
def test_special_matches_eager(compile_model, name):
    x = _points()
    ep, model = compile_model(Special(UNARY[name]), (x,))
    torch.testing.assert_close(model(x), ep.module()(x), equal_nan=True)


class TwoArg(torch.nn.Module):
    def forward(self, p, x, q):
        return (S.ndtri(p), S.zeta(x, q), torch.polygamma(0, x), torch.polygamma(1, q),
                torch.polygamma(3, q), S.zeta(x, 2.5))


def test_ndtri_zeta_polygamma_match_eager(compile_model):
    g = torch.Generator().manual_seed(1)
    p = torch.cat([torch.rand(200, generator=g), torch.tensor([0.0, 1.0, 1e-30, 1 - 1e-7, 0.5,
                                                               -0.1, 1.1])])
    x = torch.cat([torch.rand(200, generator=g) * 20 - 5, torch.tensor([1.0, 2.0, 0.5, -3.0,
                                                                        30.0, 1.5, 4.0])])
    q = torch.cat([torch.rand(200, generator=g) * 20 - 10, torch.tensor([1.0, -2.0, 0.0, 0.1,
                                                                         50.0, -2.5, 3.0])])
    ep, model = compile_model(TwoArg(), (p, x, q))
    torch.testing.assert_close(model(p, x, q), ep.module()(p, x, q), equal_nan=True)


POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w")


class Polynomial(torch.nn.Module):
    def __init__(self, name):
        super().__init__()
        self.fn = getattr(S, name)

    def forward(self, x, n):
        return self.fn(x, n), self.fn(x, 3.0)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_chebyshev_polynomials_match_eager(compile_model, name):
    # endpoints of both intervals, |x| > 1, the trigonometric form of high degrees, negative
    # and NaN degrees, and a huge degree (the recurrence stops once it overflows to NaN). No NaN
    # x: eager's recurrence then returns an uninitialized value for some kinds.
    xs = torch.tensor([-1.0, 1.0, 0.0, 0.5, -0.3, 0.99, 1.5, -2.0, 0.25, 3.0, 0.75, 0.99999994,
                       -0.99999994, 5.9604645e-08])
    ns = torch.tensor([0.0, 1.0, 2.0, 5.0, 7.0, 9.0, 12.0, -1.0, 30.0, float("nan"), 1e7])
    x, n = xs.repeat_interleave(len(ns)), ns.repeat(len(xs))
    ep, model = compile_model(Polynomial(name), (x, n))
    torch.testing.assert_close(model(x, n), ep.module()(x, n), equal_nan=True)


class IncompleteGamma(torch.nn.Module):
    def forward(self, a, x):
        return torch.igamma(a, x), torch.igammac(a, x)


def _gamma_grid():
    # small and large shapes a, both tails (P or Q tiny), the transition x ~ a where very large
    # a uses the uniform expansion, and the domain's edges: zeros, infinities, negatives, NaN
    a = torch.tensor([1e-3, 0.1, 0.5, 1.0, 2.5, 7.0, 30.0, 150.0, 1e3, 2e4, 9e4, 3e5, 5e6])
    lam = torch.tensor([1e-3, 0.1, 0.5, 0.9, 0.99, 1.0, 1.01, 1.1, 1.5, 3.0, 10.0])
    grid_a = a.repeat_interleave(len(lam))
    grid_x = grid_a * lam.repeat(len(a))
    edges = [(0.0, 0.0), (0.0, 2.0), (2.0, 0.0), (float("inf"), 3.0), (3.0, float("inf")),
             (float("inf"), float("inf")), (-1.0, 2.0), (2.0, -1.0), (float("nan"), 1.0),
             (1.0, float("nan")), (0.5, 1e-30), (1e-20, 0.5)]
    return (torch.cat([grid_a, torch.tensor([e[0] for e in edges])]),
            torch.cat([grid_x, torch.tensor([e[1] for e in edges])]))


@pytest.mark.parametrize("dtype", (torch.float32, torch.float16, torch.bfloat16), ids=str)
def test_incomplete_gamma_matches_eager(compile_model, dtype):
    a, x = (t.to(dtype) for t in _gamma_grid())
    if dtype is not torch.float32:  # keep a and x finite in the narrow types
        keep = (a.float() < 6e4) & (x.float() < 6e4)
        a, x = a[keep], x[keep]
    ep, model = compile_model(IncompleteGamma(), (a, x))
    torch.testing.assert_close(model(a, x), ep.module()(a, x), equal_nan=True)


class ErfInv(torch.nn.Module):
    def forward(self, x):
        return torch.erfinv(x)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float16, torch.bfloat16), ids=str)
def test_erfinv_matches_eager(compile_model, dtype):
    # the Newton branch (|x| < 1/2), the quantile branch up to the poles, and the domain's edge
    inner = torch.linspace(-0.999, 0.999, 301)
    edges = torch.tensor([0.0, -0.0, 1e-30, 1e-7, -0.4999, 0.5, 0.9999999, -0.99999, 1.0, -1.0,
                          1.0001, -3.0, float("nan")])
    x = torch.cat([inner, edges]).to(dtype)
    ep, model = compile_model(ErfInv(), (x,))
    torch.testing.assert_close(model(x), ep.module()(x), equal_nan=True)
