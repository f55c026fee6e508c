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
    """x times each window (a frame of a spectrogram's front end), and the windows themselves."""

    def __init__(self, windows, n, dtype):
        super().__init__()
        self.windows, self.n, self.dtype = windows, n, dtype

    def forward(self, x):
        ws = [w(self.n, self.dtype) for w in self.windows]
        return [x * w for w in ws], ws


@pytest.mark.parametrize("n", [0, 1, 7, 16])
def test_windows_match_eager(compile_model, n):
    x = torch.randn(3, n)
    ep, model = compile_model(Windowed([WINDOWS[k] for k in sorted(WINDOWS)], n, torch.float32),
                              (x,))
    torch.testing.assert_close(model(x), ep.module()(x))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_window_dtypes_match_eager(compile_model, dtype):
    x = torch.randn(2, 10, dtype=dtype)
    names = ["hann", "hamming_alpha", "kaiser_beta", "bartlett", "blackman_symmetric"]
    ep, model = compile_model(Windowed([WINDOWS[k] for k in names], 10, dtype), (x,))
    got, want = model(x), ep.module()(x)
    assert [t.dtype for t in got[1]] == [dtype] * len(names)
    torch.testing.assert_close(got, want)


def test_window_without_freezing_is_a_stored_constant(compile_model):
    x = torch.randn(4, 12)
    ep, model = compile_model(Windowed([WINDOWS["kaiser_beta"]], 12, torch.float32), (x,),
                              options={"freezing": False})
    torch.testing.assert_close(model(x), ep.module()(x))
