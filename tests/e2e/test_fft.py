"""Discrete Fourier transforms on the shipped kernel (kernels/fft.cpp) against eager:
torch.fft's functions and the aten ops they become, complex64 and complex128 (float32 and
float64 real inputs), on power-of-two, odd, prime and 1 lengths (mixed radix and Bluestein),
batched, n-dimensional, over non-contiguous inputs, every norm mode, a dynamic length; a
package run numpy-only; the same result at every thread count."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy_only import run_without_torch

import aotc
from aotc.errors import UnsupportedOperatorError
from models import Fn

F = torch.fft
aten = torch.ops.aten
LENGTHS = [1, 2, 7, 12, 17, 60, 97, 128, 257, 1000]
NORMS = ["backward", "ortho", "forward"]
REAL = {torch.complex64: torch.float32, torch.complex128: torch.float64}


def widened(t):
    return t.to({torch.float32: torch.float64, torch.complex64: torch.complex128}.get(t.dtype,
                                                                                    t.dtype))


def check(fn, got, want, args) -> None:
    """got == eager's want within assert_close, dtypes and shapes included. In single precision
    a long unnormalized transform's elements near zero (of outputs up to ~100) carry eager's
    own error past assert_close's absolute 1e-5; there each output passes when its error
    against the double-precision transform is at most twice eager's, as the OpInfo sweep takes
    eager's complex64 pow."""
    try:
        torch.testing.assert_close(got, want)
        return
    except AssertionError:
        if not any(a.dtype in (torch.float32, torch.complex64) for a in args):
            raise
    exact = fn(*[widened(a) for a in args])
    flat = zip(*(torch.utils._pytree.tree_leaves(v) for v in (got, want, exact)))
    for k, (g, w, e) in enumerate(flat):
        assert (g.dtype, g.shape) == (w.dtype, w.shape), k
        ours, eagers = (g.to(e.dtype) - e).abs().max(), (w.to(e.dtype) - e).abs().max()
        assert ours <= 2 * eagers + 1e-7, f"output {k}: error {ours}, eager's {eagers}"


def one_dim(x, z):
    """Every 1-D op in every norm mode on real x and complex z [batch, n]."""
    n = x.shape[-1]
    out = []
    for norm in NORMS:
        out += [F.fft(z, norm=norm), F.ifft(z, norm=norm), F.fft(x, norm=norm),
                F.rfft(x, norm=norm), F.irfft(z, n=n, norm=norm), F.hfft(z, n=n, norm=norm),
                F.ihfft(x, norm=norm)]
    return out


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_one_dim_ops_on_every_length(compile_model, dtype):
    torch.manual_seed(0)
    xs = [torch.randn(3, n, dtype=REAL[dtype]) for n in LENGTHS]
    zs = [torch.randn(3, n, dtype=dtype) for n in LENGTHS]
    fn = Fn(lambda *a: [one_dim(x, z) for x, z in zip(a[:len(LENGTHS)], a[len(LENGTHS):])])
    ep, model = compile_model(fn, xs + zs)
    got, want = model(*xs, *zs), ep.module()(*xs, *zs)
    assert len(got) == len(LENGTHS) and len(got[0]) == 21
    check(fn, got, want, xs + zs)


def n_dim(x, z, v):
    """n-D transforms, padded and cut lengths, the aten ops themselves with each norm code,
    shifts; x real [2, 7, 3, 12], z complex [2, 5, 6], v complex viewed non-contiguously."""
    t = z.transpose(0, 2)  # [6, 5, 2], non-contiguous
    out = [F.fft2(z), F.ifft2(z, norm="ortho"), F.fftn(z, dim=(0, 2), norm="forward"),
           F.ifftn(t, s=(7, 3), dim=(-1, 0)), F.rfft2(x), F.irfft2(z, norm="ortho"),
           F.rfftn(x, dim=(1, 3)), F.rfftn(x, s=(4, 5, 17), norm="forward"),
           F.irfftn(z, s=(5, 9)), F.irfftn(t, dim=(0, 1), norm="forward"), F.hfft2(z),
           F.ihfft2(x, norm="ortho"), F.ihfftn(x[:, ::2], dim=(0, 1, 3)),
           F.fft(x.transpose(1, 3), dim=1), F.fft(v[:, 1::3, ::2], dim=0),
           F.rfft(x[..., ::3], n=9, dim=-1), F.fft(z, n=4, dim=1), F.ifft(z, n=11, dim=0),
           F.fftshift(z), F.ifftshift(F.fft(z), dim=(0, 2)), F.fftshift(x, dim=1)]
    for code in (0, 1, 2):
        out += [aten._fft_c2c(z, [2, 0], code, True), aten._fft_c2c(t, [1], code, False),
                aten._fft_r2c(x, [0, 3], code, False), aten._fft_r2c(x, [1], code, True),
                aten._fft_c2r(z, [0, 2], code, 10), aten._fft_c2r(z, [1], code, 8)]
    prims = torch.ops.prims  # what torch's references for torch.fft reach
    return out + [prims.fft_c2c(t, dim=[0, 2], forward=False),
                  prims.fft_r2c(x, dim=[2, 1], onesided=True),
                  prims.fft_c2r(z, dim=[2, 1], last_dim_size=9)]


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_n_dim_ops_non_contiguous_inputs_and_norm_codes(compile_model, dtype):
    torch.manual_seed(1)
    x = torch.randn(2, 7, 3, 12, dtype=REAL[dtype])
    z = torch.randn(2, 5, 6, dtype=dtype)
    v = torch.randn(4, 9, 6, dtype=dtype)
    ep, model = compile_model(Fn(n_dim), (x, z, v))
    got, want = model(x, z, v), ep.module()(x, z, v)
    assert len(got) == 42
    check(n_dim, got, want, (x, z, v))


def test_dynamic_length_and_batch(compile_model):
    torch.manual_seed(2)
    fn = Fn(lambda x, z: (F.rfft(x, norm="ortho"), F.ifft(z), F.fft2(z, norm="forward"),
                          F.irfft(z, norm="ortho")))
    dims = ({0: torch.export.Dim("b"), 1: torch.export.Dim("n", min=2, max=4096)},
            {0: torch.export.Dim("b2"), 1: torch.export.Dim("m", min=2, max=4096)})
    x, z = torch.randn(2, 8), torch.randn(3, 16, dtype=torch.complex64)
    ep, model = compile_model(fn, (x, z), dynamic_shapes=(dims,))
    for b, n in [(2, 8), (1, 97), (4, 1000), (3, 4093)]:
        x, z = torch.randn(b, n), torch.randn(b + 1, n + 3, dtype=torch.complex64)
        check(fn, model(x, z), ep.module()(x, z), (x, z))


def test_same_result_at_every_thread_count(compile_model, tmp_path):
    torch.manual_seed(3)
    x = torch.randn(64, 257)
    z = torch.randn(48, 1000, dtype=torch.complex128)
    ep, _ = compile_model(Fn(lambda x, z: (F.rfft(x), F.fft(z.mT, dim=0), F.irfft(z))),
                          (x, z))
    outs = [aotc.load_package(tmp_path / "model.pt2", num_threads=n)(x, z) for n in (1, 2, 3)]
    torch.testing.assert_close(outs[0], ep.module()(x, z))
    assert all(torch.equal(a, b) for o in outs[1:] for a, b in zip(outs[0], o))


def test_runs_without_torch(tmp_path):
    torch.manual_seed(4)
    x, z = torch.randn(3, 97), torch.randn(2, 12, dtype=torch.complex64)
    fn = Fn(lambda x, z: (F.rfft(x), F.ifft2(z, norm="ortho"), F.irfft(z, n=22)))
    ep = torch.export.export(fn, (x, z))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "fft.pt2")
    (outs,) = run_without_torch(path, [[x.numpy(), z.numpy()]], tmp_path / "run")
    for got, want in zip(outs, ep.module()(x, z)):
        assert got.dtype == want.numpy().dtype
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


REFUSED = {
    "normalization": (lambda x: aten._fft_c2c(x.to(torch.complex64), [0], 3, True),
                      r"_fft_c2c.*normalization 3"),
    "align_to_window": (lambda x: torch.stft(x, 4, center=False, align_to_window=True,
                                             return_complex=True), r"stft.*align_to_window"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_aotc_does_not_compute_is_unsupported(tmp_path, name):
    fn, message = REFUSED[name]
    ep = torch.export.export(Fn(fn), (torch.randn(8),))
    with pytest.raises(UnsupportedOperatorError, match=message):
        aotc.compile_and_package(ep, package_path=tmp_path / "bad.pt2")


def stfts(x, y):
    """x [batch, length], y [length]: centered (reflect, constant) and not, one- and two-sided,
    normalized, a window shorter than n_fft, the default hop, no window, complex signals and
    windows, return_complex=False; istft of stft's results, one- and two-sided, complex."""
    hann = torch.hann_window(16, dtype=x.dtype)
    return (torch.stft(x, 16, hop_length=4, window=hann, return_complex=True),
            torch.stft(x, 16, hop_length=5, window=hann, pad_mode="constant", onesided=False,
                       return_complex=True),
            torch.stft(y, 12, hop_length=3, win_length=9, center=False, normalized=True,
                       window=torch.hann_window(9, periodic=False, dtype=x.dtype),
                       return_complex=True),
            torch.stft(y, 20, window=torch.hann_window(20, dtype=x.dtype), return_complex=True),
            torch.stft(x[:, ::2], 7, hop_length=2, center=False, return_complex=True),
            torch.stft(torch.polar(x, y[:101]), 10, hop_length=3, window=hann[:10],
                       normalized=True, return_complex=True),
            torch.stft(x, 8, window=torch.polar(hann[:8], hann[8:]), return_complex=True),
            torch.stft(torch.polar(x, y[:101]), 8, window=torch.polar(hann[:8], hann[8:]),
                       return_complex=False),
            torch.istft(torch.stft(x, 16, hop_length=4, window=hann, return_complex=True), 16,
                        hop_length=4, window=hann, length=101),
            torch.istft(torch.stft(y, 12, hop_length=3, onesided=False, return_complex=True),
                        12, hop_length=3, onesided=False),
            torch.istft(torch.stft(torch.polar(x, y[:101]), 10, hop_length=2,
                                   return_complex=True), 10, hop_length=2, window=hann[:10],
                        onesided=False, return_complex=True))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_stft(compile_model, dtype):
    torch.manual_seed(5)
    x, y = torch.randn(3, 101, dtype=dtype), torch.randn(257, dtype=dtype)
    ep, model = compile_model(Fn(stfts), (x, y))
    got, want = model(x, y), ep.module()(x, y)
    assert len(got) == 11
    check(stfts, got, want, (x, y))


def test_stft_of_a_dynamic_length(compile_model):
    torch.manual_seed(6)
    fn = Fn(lambda x: torch.stft(x, 16, hop_length=4, window=torch.hann_window(16),
                                 return_complex=True))
    dims = ({0: torch.export.Dim("b"), 1: torch.export.Dim("n", min=20, max=5000)},)
    ep, model = compile_model(fn, (torch.randn(2, 100),), dynamic_shapes=(dims,))
    for b, n in [(2, 100), (1, 37), (3, 999)]:
        x = torch.randn(b, n)
        got = model(x)
        assert got.shape == (b, 9, 1 + n // 4)
        check(fn, got, ep.module()(x), (x,))
