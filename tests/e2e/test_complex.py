"""complex64 and complex128 end to end against eager: inputs, outputs and constants, the
complex ops (pointwise, views, reductions, products, casts, creation), a non-contiguous
input, a LLaMA attention block with Meta's rotary embedding (also numpy-only), and an
UnsupportedOperatorError for a complex op aotc does not compute."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from numpy_only import run_without_torch

import aotc
from aotc.errors import UnsupportedOperatorError

DTYPES = [torch.complex64, torch.complex128]


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def crandn(*shape, dtype=torch.complex64) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype)


def check(compile_model, fn, args, dynamic_shapes=None):
    """Compile fn over args, run it, and compare every output (dtypes included) with eager."""
    ep, model = compile_model(Fn(fn), args, dynamic_shapes=dynamic_shapes)
    got = model(*args)
    want = ep.module()(*args)
    torch.testing.assert_close(got, want)
    return ep, model


def pointwise(z, w, x):
    """z, w complex [.., n]; x real of z's real dtype and shape."""
    return (-z, z.conj(), torch.conj_physical(z), torch.exp(z), torch.log(z), torch.sqrt(z),
            torch.sqrt(-z), torch.reciprocal(z), z.abs(), z.angle(), z.real, z.imag,
            z ** 2, z ** 0.5, z ** 3, z ** -1, z * w, z / w, z + w, z - w, z * 2.5, z / 3,
            z + 1, 2 - z, z - x, x * z, z / x, z * 1j, torch.add(z, w, alpha=2),
            z == w, z != w, z == z, torch.isnan(z), torch.isfinite(z), torch.isinf(z),
            torch.where(x > 0, z, w), torch.where(x > 0, z, 0.0), z.conj().imag,
            z.resolve_conj(), (z * w.conj()).resolve_conj(), torch.sin(z), torch.cos(z),
            torch.rsqrt(z), torch.square(z), torch.sgn(z), z ** w, 2 ** z, z ** x, z ** 2.5,
            torch.sinh(z), torch.cosh(z), torch.tanh(z), torch.tanh(z * 30), torch.log10(z),
            torch.log2(z), torch.sigmoid(z))


@pytest.mark.parametrize("dtype", DTYPES)
def test_pointwise(compile_model, dtype):
    torch.manual_seed(0)
    z, w = crandn(3, 5, 7, dtype=dtype), crandn(3, 5, 7, dtype=dtype)
    check(compile_model, pointwise, (z, w, torch.randn(3, 5, 7, dtype=dtype.to_real())))


def boundary(x, a, b):
    """x real [.., 2]; a, b real: complex built from reals and taken apart."""
    z = torch.view_as_complex(x)
    p = torch.polar(a.abs(), b)
    c = torch.complex(a, b)
    return z, torch.view_as_real(z * 2), p, c, torch.view_as_real(p * c).flatten(-2), p.abs()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_view_as_complex_polar_complex(compile_model, dtype):
    torch.manual_seed(1)
    x = torch.randn(2, 3, 5, 2, dtype=dtype)
    check(compile_model, boundary, (x, torch.randn(3, 5, dtype=dtype), torch.randn(3, 5, dtype=dtype)))


def reductions(z, w, m, x):
    """z [b, n, k], w [b, k, p], m [k, p] complex; x [k, p] real."""
    return (z.sum(), z.sum(1), z.sum((0, 2), keepdim=True), z.sum(-1), z.mean(), z.mean(-2),
            z.mean((1, 2), keepdim=True), torch.bmm(z, w), z @ w, torch.mm(z[0], m),
            torch.matmul(z, m), z @ x.to(z.dtype), torch.matmul(z[1], w[1]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_and_products(compile_model, dtype):
    torch.manual_seed(2)
    args = (crandn(3, 5, 7, dtype=dtype), crandn(3, 7, 4, dtype=dtype), crandn(7, 4, dtype=dtype),
            torch.randn(7, 4, dtype=dtype.to_real()))
    check(compile_model, reductions, args)


def views(z, w):
    """z [2, 3, 5] complex, w [3, 5] complex."""
    return (z.reshape(6, 5), z.view(2, 15), z.permute(2, 0, 1), z.transpose(0, -1), z.mT,
            z.unsqueeze(-1), z.unsqueeze(1), z[:, :1].squeeze(1), z[:1].squeeze(),
            z[:, 1:3, ::2], z[..., -1], z.select(1, 2), torch.cat([z, z * 2], -1),
            torch.cat([z[0], w], 0), torch.stack([w, w.conj()], -1), torch.stack([w, w], 0),
            w.expand(2, 3, 5), w[:, :1].expand(3, 4), z.clone(), z.flatten(), z.flatten(1),
            z.flatten(0, 1), w.t(), torch.flip(z, (-1,)), z.unflatten(-1, (5, 1)),
            *torch.split(z, 2, -1), *torch.unbind(w, -2), z.narrow(-1, 1, 3), z.contiguous(),
            z.permute(1, 0, 2).reshape(3, 10), torch.nn.functional.pad(z, (1, 2)),
            torch.roll(w, 1, -1), torch.vdot(w[0], w[1]))


def updates(z, w, idx):
    """z [4, 3, 5], w [3, 5] complex, idx int64 [2]: writes into copies of complex tensors."""
    a, b, c, d = z.clone(), z.clone(), z.clone(), z.clone()
    a[:, 1:3] = w[:2] * 2
    b[2] = w
    c[idx] = w * 1j
    c[0, idx, 1] += 1
    d.index_copy_(0, idx, w.unsqueeze(0).expand(2, 3, 5))
    return (a, b, c, d, z.masked_fill(z.real > 0, 0.5j), z.gather(1, idx.view(1, 2, 1).expand(4, 2, 5)),
            torch.slice_scatter(z, w[None] * 3, 0, 1, 2), z.cumsum(-1), z.cumsum(0),
            torch.diagonal(z, 1, -2, -1), torch.diagonal(z, 0, 0, 2), w.tril(), w.triu(1),
            torch.trace(w[:, :3]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_updates_and_scatters(compile_model, dtype):
    torch.manual_seed(10)
    check(compile_model, updates, (crandn(4, 3, 5, dtype=dtype), crandn(3, 5, dtype=dtype),
                                   torch.tensor([2, 0])))


@pytest.mark.parametrize("dtype", DTYPES)
def test_views_and_copies(compile_model, dtype):
    torch.manual_seed(3)
    check(compile_model, views, (crandn(2, 3, 5, dtype=dtype), crandn(3, 5, dtype=dtype)))


def casts(z, x, n):
    """z complex, x real, n int64: to/_to_copy between complex and real, creation ops."""
    other = torch.complex128 if z.dtype == torch.complex64 else torch.complex64
    return (z.to(other), z.to(torch.float32), z.real.to(torch.float64), z.to(torch.bool),
            x.to(z.dtype), n.to(z.dtype), x.to(other) * z, z + x.to(torch.float64),
            torch.zeros(2, 3, dtype=z.dtype), torch.ones(3, dtype=z.dtype),
            torch.full((2, 2), 1.5 - 2j, dtype=z.dtype), torch.zeros_like(z), torch.ones_like(z),
            torch.full_like(z, 3j), z.new_zeros(4), z + torch.ones(3, 5, dtype=z.dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_casts_and_creation(compile_model, dtype):
    torch.manual_seed(4)
    z = crandn(3, 5, dtype=dtype)
    z[0, 0] = 0  # to(bool) of zero
    args = (z, torch.randn(3, 5), torch.arange(15).reshape(3, 5))
    with warnings.catch_warnings():  # complex to real discards the imaginary part, as eager
        warnings.simplefilter("ignore")
        check(compile_model, casts, args)


@pytest.mark.parametrize("dtype", DTYPES)
def test_transposed_input_and_dynamic_batch(compile_model, dtype):
    torch.manual_seed(5)
    z = crandn(7, 4, dtype=dtype).t()  # non-contiguous: the runtime makes it contiguous
    assert not z.is_contiguous()
    w = crandn(4, 7, dtype=dtype)
    batch = torch.export.Dim("batch", min=1, max=64)
    def fn(z, w):  # the sizes of complex values, as export reads them (sym_size)
        return z * w + 1j, (z @ w.mT).abs(), z.reshape(z.shape[0], 7, 1), z.new_zeros(z.shape[0])

    ep, model = check(compile_model, fn, (z, w), dynamic_shapes=(({0: batch}, {0: batch}),))
    for b in (1, 9):
        args = (crandn(7, b, dtype=dtype).t(), crandn(b, 7, dtype=dtype))
        torch.testing.assert_close(model(*args), ep.module()(*args))


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_arrays_in_and_out(compile_model, dtype):
    torch.manual_seed(6)
    z = crandn(4, 3, dtype=dtype)
    ep, model = compile_model(Fn(lambda z: (z.exp() * 2, z.abs())), (z,))
    got = model(z.numpy())
    want = ep.module()(z)
    assert got[0].dtype == np.dtype(str(dtype).replace("torch.", ""))
    np.testing.assert_allclose(got[0], want[0].numpy(), rtol=1e-5)
    np.testing.assert_allclose(got[1], want[1].numpy(), rtol=1e-5)


class ComplexBuffer(torch.nn.Module):
    """A registered complex buffer, read directly and through a slice (freezing folds it)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("c", torch.polar(torch.ones(6, 4), torch.randn(6, 4)))

    def forward(self, z):
        return z * self.c[1:4], self.c.conj()


def test_complex_constant_with_and_without_freezing(compile_model, tmp_path):
    torch.manual_seed(7)
    z = crandn(3, 4)
    for freezing in (True, False):
        ep, model = compile_model(ComplexBuffer(), (z,), options={"freezing": freezing},
                                  name=f"f{freezing}.pt2")
        torch.testing.assert_close(model(z), ep.module()(z))


REFUSED = {
    "cumprod": (lambda z: z.cumprod(1) * 2, r"aten\.cumprod.*test_complex\.py:\d+.*prims\.prod"),
    "prod": (lambda z: z.prod(1), r"aten\.prod.*test_complex\.py:\d+.*prims\.prod"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_complex_op_without_a_form_is_refused(compile_model, name):
    fn, message = REFUSED[name]
    with pytest.raises(UnsupportedOperatorError, match=message):
        compile_model(Fn(fn), (crandn(4, 8),))


# ---- Meta's reference LLaMA attention with complex rotary embeddings ---------------------------

def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def reshape_for_broadcast(freqs_cis: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    ndim = x.ndim
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class Attention(torch.nn.Module):
    """Meta's llama/model.py Attention (no KV cache), with its freqs_cis a registered buffer."""

    def __init__(self, dim=48, n_heads=4, n_kv_heads=2, max_seq=32):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, dim // n_heads
        self.wq = torch.nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = torch.nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = torch.nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = torch.nn.Linear(n_heads * self.head_dim, dim, bias=False)
        self.register_buffer("freqs_cis", precompute_freqs_cis(self.head_dim, max_seq))

    def forward(self, x, start_pos: int = 0):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, self.freqs_cis[start_pos:start_pos + seqlen])
        rep = self.n_heads // self.n_kv_heads
        keys = xk.repeat_interleave(rep, dim=2).transpose(1, 2)
        values = xv.repeat_interleave(rep, dim=2).transpose(1, 2)
        xq = xq.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = torch.full((seqlen, seqlen), float("-inf")).triu(1)
        scores = torch.softmax((scores + mask).float(), dim=-1).type_as(xq)
        out = torch.matmul(scores, values).transpose(1, 2).reshape(bsz, seqlen, -1)
        return self.wo(out)


@pytest.fixture(scope="module")
def llama_attention(tmp_path_factory):
    torch.manual_seed(8)
    module = Attention().eval()
    x = torch.randn(2, 11, 48)
    seq = torch.export.Dim("seq", min=2, max=32)
    with torch.no_grad():
        ep = torch.export.export(module, (x,), dynamic_shapes=({1: seq},))
        path = aotc.compile_and_package(
            ep, package_path=tmp_path_factory.mktemp("llama") / "attention.pt2")
    return module, ep, path


def test_llama_attention_with_complex_rotary_embedding(llama_attention):
    module, ep, path = llama_attention
    model = aotc.load_package(path)
    for seqlen in (11, 2, 32):
        x = torch.randn(2, seqlen, 48)
        with torch.no_grad():
            torch.testing.assert_close(model(x), module(x), rtol=2e-5, atol=2e-5)


def test_llama_attention_numpy_only(llama_attention, tmp_path):
    module, _, path = llama_attention
    xs = [torch.randn(2, 5, 48), torch.randn(2, 17, 48)]
    results = run_without_torch(path, [[x.numpy()] for x in xs], tmp_path)
    for x, outs in zip(xs, results):
        with torch.no_grad():
            np.testing.assert_allclose(outs[0], module(x).numpy(), rtol=2e-5, atol=2e-5)


class Accumulate(torch.nn.Module):
    """A complex registered buffer updated in place: model state."""

    def __init__(self):
        super().__init__()
        self.register_buffer("acc", torch.ones(4, dtype=torch.complex64))
        self.register_buffer("last", torch.zeros(2, dtype=torch.complex128))

    def forward(self, z):
        self.acc.mul_(z)
        self.last.copy_(z[:2])
        return self.acc * 1, self.last.abs()


def test_complex_state_and_input_updated_in_place(compile_model):
    torch.manual_seed(9)
    _, model = compile_model(Accumulate(), (crandn(4),))
    eager = Accumulate()
    for _ in range(3):
        z = crandn(4)
        torch.testing.assert_close(model(z), eager(z))
    torch.testing.assert_close(torch.as_tensor(model.get_buffer("acc")), eager.acc)
    model.set_buffer("acc", np.full(4, 2j, np.complex64))
    torch.testing.assert_close(torch.as_tensor(model.get_buffer("last")), eager.last)
    torch.testing.assert_close(model(torch.ones(4, dtype=torch.complex64))[0],
                               torch.full((4,), 2j, dtype=torch.complex64))

    def rotate(z):
        z.mul_(2j)
        real = z.to(torch.float32)  # a copy: updating it leaves z as it is
        real.add_(1)
        return z.abs(), real

    ep, model = compile_model(Fn(rotate), (crandn(3, 2),), name="rotate.pt2")
    a = crandn(3, 2)
    b = a.clone()
    torch.testing.assert_close(model(a), ep.module()(b))
    torch.testing.assert_close(a, b)  # the caller's tensor updated as eager updates it


def test_special_values_follow_eager(compile_model):
    """inf and nan parts: a real operand is promoted to (x, 0) before the product, and add
    multiplies by alpha (1 + 0j), as eager does: (inf + 1j) * 2 is inf + nan j and
    0j + inf is inf + nan j there and here."""
    inf, nan = float("inf"), float("nan")
    z = torch.tensor([complex(inf, 1), complex(1, -inf), complex(nan, 0), complex(0, 0),
                      complex(-0.0, 2), complex(3, -4)], dtype=torch.complex64)
    x = torch.tensor([2.0, -inf, 0.0, 1.0, nan, -1.0])

    def special(z, x):
        return (z * 2, z * x, x * z, z * z.flip(0), z + x, z - 1, z.conj(), z / 2, z / x,
                z + z.flip(0), 1 - z, z + float('inf'), torch.add(z, x, alpha=2),
                z ** -1.0, 1 / z, z.flip(0) ** 0.5, torch.sqrt(z),
                z.abs(), torch.isnan(z), torch.isinf(z), torch.isfinite(z))

    ep, model = compile_model(Fn(special), (z, x))
    for got, want in zip(model(z, x), ep.module()(z, x)):
        if got.is_complex():
            got, want = torch.view_as_real(got), torch.view_as_real(want.resolve_conj())
        torch.testing.assert_close(got, want, equal_nan=True)


def test_updates_through_real_views_of_complex_tensors(compile_model):
    """z.real, z.imag and view_as_real(z) are views: updating them updates z (a local, and the
    caller's input), as in eager."""
    def fn(z):
        y = z * 1
        y.real.mul_(2)
        y.imag.zero_()
        v = torch.view_as_real(z)
        v[..., 1] += 3
        return y, z * 1

    ep, model = compile_model(Fn(fn), (crandn(3, 4),))
    a = crandn(3, 4)
    b = a.clone()
    torch.testing.assert_close(model(a), ep.module()(b))
    torch.testing.assert_close(a, b)
