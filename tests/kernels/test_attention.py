"""The attention kernel (kernels/attention.cpp) through the Attention template, against
eager: scaled_dot_product_attention with its masks, causal flag, scale and grouped heads,
and attention written out as matmul -> softmax -> matmul, on every ISA this CPU runs."""
from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from aotc.errors import UnsupportedOperatorError
from isa_builds import runnable_isas
from models import SDPA

TOL = {"rtol": 1e-5, "atol": 1e-5}


def _rand(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype)


def _row_without_keys(mask: torch.Tensor) -> torch.Tensor:
    mask = mask.clone()
    mask[..., 3, :] = False
    return mask


# name -> (module, inputs); lengths not multiples of the 64-key block, q_len != kv_len,
# head dims 32, 64, 80 and 128, value dims different from the head dim
SDPA_CASES = {
    "plain_d32": lambda: (SDPA(), [_rand(2, 3, 70, 32)] * 3),
    "long_keys_d64": lambda: (SDPA(), [_rand(1, 2, 33, 64), _rand(1, 2, 150, 64),
                                       _rand(1, 2, 150, 80)]),
    "causal_d80": lambda: (SDPA(is_causal=True), [_rand(1, 2, 130, 80)] * 3),
    "causal_short_queries": lambda: (SDPA(is_causal=True), [_rand(1, 2, 20, 64),
                                                           _rand(1, 2, 90, 64),
                                                           _rand(1, 2, 90, 64)]),
    "causal_long_queries": lambda: (SDPA(is_causal=True), [_rand(2, 1, 100, 32),
                                                          _rand(2, 1, 40, 32),
                                                          _rand(2, 1, 40, 48)]),
    "bool_mask_broadcast": lambda: (SDPA(), [_rand(2, 3, 30, 64), _rand(2, 3, 100, 64),
                                             _rand(2, 3, 100, 64),
                                             _row_without_keys(torch.rand(30, 100) > 0.3)]),
    "bool_mask_per_batch": lambda: (SDPA(), [_rand(2, 3, 65, 32), _rand(2, 3, 65, 32),
                                             _rand(2, 3, 65, 32),
                                             torch.rand(2, 1, 65, 65) > 0.5]),
    "float_mask": lambda: (SDPA(), [_rand(2, 2, 30, 64), _rand(2, 2, 70, 64),
                                    _rand(2, 2, 70, 64),
                                    torch.where(torch.rand(2, 2, 30, 70) > 0.2,
                                                torch.randn(2, 2, 30, 70), float("-inf"))]),
    "scale": lambda: (SDPA(scale=0.3, is_causal=True), [_rand(1, 4, 50, 128)] * 3),
    "gqa": lambda: (SDPA(enable_gqa=True), [_rand(1, 8, 33, 128), _rand(1, 2, 45, 128),
                                            _rand(1, 2, 45, 128)]),
    "decode_one_query": lambda: (SDPA(), [_rand(2, 4, 1, 64), _rand(2, 4, 300, 64),
                                          _rand(2, 4, 300, 64)]),
    "decode_two_queries_bool_mask_d80": lambda: (SDPA(), [_rand(2, 3, 2, 80), _rand(2, 3, 77, 80),
                                                         _rand(2, 3, 77, 72),
                                                         torch.rand(2, 77) > 0.3]),
    "one_head_long_causal": lambda: (SDPA(is_causal=True), [_rand(1, 1, 300, 64)] * 3),
    "three_dims": lambda: (SDPA(), [_rand(3, 17, 64), _rand(3, 19, 64), _rand(3, 19, 16)]),
}


@pytest.mark.parametrize("isa", runnable_isas())
@pytest.mark.parametrize("name", sorted(SDPA_CASES))
def test_sdpa_matches_eager(compile_model, tmp_path, name, isa):
    torch.manual_seed(0)
    module, args = SDPA_CASES[name]()
    ep, model = compile_model(module, args, options={"isa": isa, "debug_dir": tmp_path / "dbg"})
    torch.testing.assert_close(model(*args), ep.module()(*args), **TOL)
    ir = (tmp_path / "dbg" / "model" / "00_import.txt").read_text()
    assert "attention[" in ir


class Causal(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def test_sdpa_dynamic_batch_and_seq(compile_model):
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=8)
    seq = torch.export.Dim("seq", min=1, max=512)
    dims = {name: {0: batch, 2: seq} for name in "qkv"}
    ep, model = compile_model(Causal(), [_rand(2, 2, 40, 64) for _ in range(3)],
                              dynamic_shapes=dims)
    for b, s in ((1, 1), (3, 64), (2, 200)):
        args = [_rand(b, 2, s, 64) for _ in range(3)]
        torch.testing.assert_close(model(*args), ep.module()(*args), **TOL)


def test_result_does_not_depend_on_the_thread_count(compile_model, tmp_path):
    import aotc

    torch.manual_seed(0)
    args = [_rand(1, 1, 300, 64), _rand(1, 1, 300, 64), _rand(1, 1, 300, 64)]
    ep, model = compile_model(SDPA(is_causal=True), args)
    path = tmp_path / "model.pt2"
    outs = [aotc.load_package(path, num_threads=n)(*args) for n in (1, 2, 3)]
    torch.testing.assert_close(outs[0], ep.module()(*args), **TOL)
    assert all(torch.equal(outs[0], o) for o in outs[1:])


class RepeatKV(nn.Module):
    """LLaMA's repeat_kv: key/value heads repeated by expand + reshape before SDPA."""

    def forward(self, q, k, v):
        b, hk, s, d = k.shape
        rep = q.shape[1] // hk

        def repeat(x):
            return x[:, :, None].expand(b, hk, rep, s, d).reshape(b, hk * rep, s, d)
        return F.scaled_dot_product_attention(q, repeat(k), repeat(v), is_causal=True)


class RepeatInterleave(nn.Module):
    def forward(self, q, k, v):
        rep = q.shape[1] // k.shape[1]
        return F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 1),
                                              v.repeat_interleave(rep, 1))


@pytest.mark.parametrize("module", [RepeatKV(), RepeatInterleave()], ids=["expand", "interleave"])
def test_repeated_heads_read_in_place(compile_model, tmp_path, module):
    torch.manual_seed(0)
    args = [_rand(2, 8, 40, 64), _rand(2, 2, 40, 64), _rand(2, 2, 40, 64)]
    ep, model = compile_model(module, args, options={"debug_dir": tmp_path / "dbg"})
    torch.testing.assert_close(model(*args), ep.module()(*args), **TOL)
    ir = (tmp_path / "dbg" / "model" / "02_fuse.txt").read_text()
    attention = next(line for line in ir.splitlines() if "attention[" in line)
    assert "group=4" in attention, attention


# ---- attention written out by hand -------------------------------------------------------

class Scaled(nn.Module):
    def forward(self, q, k, v):
        att = torch.softmax((q @ k.transpose(-2, -1)) * (1.0 / q.shape[-1] ** 0.5), dim=-1)
        return att @ v


class CausalFill(nn.Module):
    """GPT-2 style: scale by division, masked_fill from a registered lower-triangular buffer."""

    def __init__(self, n=96):
        super().__init__()
        self.register_buffer("tril", torch.tril(torch.ones(n, n)))

    def forward(self, q, k, v):
        t = q.shape[-2]
        att = (q @ k.transpose(-2, -1)) / 8.0
        att = att.masked_fill(self.tril[:t, :t] == 0, float("-inf"))
        return F.softmax(att, dim=-1) @ v


class AdditiveMask(nn.Module):
    """3-D bmm operands, the scale on the left, an additive float mask."""

    def forward(self, q, k, v, mask):
        s = 0.125 * torch.bmm(q, k.transpose(1, 2)) + mask
        return torch.bmm(s.softmax(-1), v)


class FiniteFill(nn.Module):
    def forward(self, q, k, v, keep):
        att = torch.matmul(q, k.transpose(-1, -2)).mul(0.2)
        att = att.masked_fill(~keep, -1e4)
        return torch.matmul(att.softmax(-1), v)


class HuggingFaceStyle(nn.Module):
    """Scale, additive causal mask, softmax in float32 cast back, dropout off at inference."""

    def forward(self, q, k, v, mask):
        att = torch.matmul(q, k.transpose(2, 3)) * 0.125 + mask
        att = F.softmax(att, dim=-1, dtype=torch.float32).to(q.dtype)
        att = F.dropout(att, p=0.1, training=self.training)
        return torch.matmul(att, v)


def _causal_additive(n: int) -> torch.Tensor:
    return torch.full((n, n), float("-inf")).triu(1)[None, None]


PATTERN_CASES = {
    "scaled": lambda: (Scaled(), [_rand(2, 4, 70, 64)] * 3),
    "causal_fill": lambda: (CausalFill(), [_rand(1, 3, 80, 32)] * 3),
    "additive_mask": lambda: (AdditiveMask(), [_rand(3, 20, 64), _rand(3, 30, 64),
                                               _rand(3, 30, 16), torch.randn(20, 30)]),
    "hugging_face": lambda: (HuggingFaceStyle(), [_rand(1, 4, 90, 64), _rand(1, 4, 90, 64),
                                                  _rand(1, 4, 90, 64), _causal_additive(90)]),
    "finite_fill": lambda: (FiniteFill(), [_rand(2, 2, 40, 80)] * 3
                            + [torch.rand(2, 1, 1, 40) > 0.3]),
}


@pytest.mark.parametrize("name", sorted(PATTERN_CASES))
def test_written_out_attention_is_one_template(compile_model, tmp_path, name):
    torch.manual_seed(0)
    module, args = PATTERN_CASES[name]()
    ep, model = compile_model(module, args, options={"debug_dir": tmp_path / "dbg"})
    torch.testing.assert_close(model(*args), ep.module()(*args), **TOL)
    source = (tmp_path / "dbg" / "model" / "07_codegen.cpp").read_text()
    assert "aotc_attention_f32(" in source
    # neither product is left over (the packing helpers for weights may stay)
    assert not re.search(r"aotc_sgemm(_prepacked|_fused)?\(", source)


def test_row_of_minus_infinity_is_nan_as_softmax(compile_model):
    q = _rand(1, 8, 32)
    mask = torch.zeros(8, 8)
    mask[2] = float("-inf")
    ep, model = compile_model(AdditiveMask(), [q, q, q, mask])
    out = model(q, q, q, mask)
    torch.testing.assert_close(out, ep.module()(q, q, q, mask), equal_nan=True, **TOL)
    assert out[0, 2].isnan().all() and not out[0, 1].isnan().any()


class WeightsToo(nn.Module):
    """The attention weights are an output too: the chain must stay as it is."""

    def forward(self, q, k, v):
        att = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
        return att @ v, att


def test_chain_whose_weights_are_read_elsewhere_is_left_alone(compile_model, tmp_path):
    args = [_rand(1, 2, 10, 16)] * 3
    ep, model = compile_model(WeightsToo(), args, options={"debug_dir": tmp_path / "dbg"})
    for ours, theirs in zip(model(*args), ep.module()(*args)):
        torch.testing.assert_close(ours, theirs, **TOL)
    assert "aotc_attention_f32(" not in (tmp_path / "dbg" / "model" / "07_codegen.cpp").read_text()


def test_dropout_is_refused_with_a_clear_error(compile_model):
    args = [_rand(1, 2, 10, 16)] * 3
    with pytest.raises(UnsupportedOperatorError, match="dropout_p"):
        compile_model(SDPA(dropout_p=0.5), args)


def test_float64_sdpa_compiles_through_its_decomposition(compile_model, tmp_path):
    args = [_rand(1, 2, 9, 16, dtype=torch.float64) for _ in range(3)]
    ep, model = compile_model(SDPA(is_causal=True), args,
                              options={"debug_dir": tmp_path / "dbg"})
    torch.testing.assert_close(model(*args), ep.module()(*args))
    assert "attention[" not in (tmp_path / "dbg" / "model" / "00_import.txt").read_text()
