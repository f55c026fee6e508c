"""The window functions against eager: every overload (periodic or symmetric, hamming's
alpha and beta, kaiser's beta), lengths 0, 1, odd and even, in each floating dtype, with and
without freezing; folded into a constant, and numpy-only at run time like any package."""
from __future__ import annotations

import pytest
import torch

WINDOWS = {
    "hann": lambda n, d: torch.hann_window(n, dtype=d),
    "hann_symmetric": lambda n, d: torch.hann_window(n, periodic=False, dtype=d),
    "hamming": lambda n, d: torch.hamming_window(n, dtype=d),
    "hamming_symmetric": lambda n, d: torch.hamming_window(n, False, dtype=d),
    "hamming_alpha": lambda n, d: torch.hamming_window(n, True, 0.6, dtype=d),
    "hamming_alpha_beta": lambda n, d: torch.hamming_window(n, False, 0.5, 0.4, dtype=d),
    "blackman": lambda n, d: torch.blackman_window(n, dtype=d),
    "blackman_symmetric": lambda n, d: torch.blackman_window(n, False, dtype=d),
    "bartlett": lambda n, d: torch.bartlett_window(n, dtype=d),
    "bartlett_symmetric": lambda n, d: torch.bartlett_window(n, False, dtype=d),
    "kaiser": lambda n, d: torch.kaiser_window(n, dtype=d),
    "kaiser_symmetric": lambda n, d: torch.kaiser_window(n, False, dtype=d),
    "kaiser_beta": lambda n, d: torch.kaiser_window(n, True, 8.0, dtype=d),
}


class Windowed(torch.nn.Module):
    """x times the window (a frame of a spectrogram's front end), and the window itself."""

    def __init__(self, window, n, dtype):
        super().__init__()
        self.window, self.n, self.dtype = window, n, dtype

    def forward(self, x):
        w = self.window(self.n, self.dtype)
        return x * w, w


@pytest.mark.parametrize("name", sorted(WINDOWS))
@pytest.mark.parametrize("n", [0, 1, 7, 16])
def test_window_matches_eager(compile_model, name, n):
    x = torch.randn(3, n)
    ep, model = compile_model(Windowed(WINDOWS[name], n, torch.float32), (x,))
    for got, want in zip(model(x), ep.module()(x)):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", ["hann", "hamming_alpha", "kaiser_beta", "bartlett"])
def test_window_dtypes_match_eager(compile_model, name, dtype):
    x = torch.randn(2, 10, dtype=dtype)
    ep, model = compile_model(Windowed(WINDOWS[name], 10, dtype), (x,))
    for got, want in zip(model(x), ep.module()(x)):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)


def test_window_without_freezing_is_a_stored_constant(compile_model):
    x = torch.randn(4, 12)
    ep, model = compile_model(Windowed(WINDOWS["kaiser_beta"], 12, torch.float32), (x,),
                              options={"freezing": False})
    for got, want in zip(model(x), ep.module()(x)):
        torch.testing.assert_close(got, want)
