"""float16 and bfloat16 scaled_dot_product_attention against eager.

Eager runs these calls on PyTorch's CPU flash-attention kernel (or, for the calls it cannot
take, its math path in float32). The flash kernel rounds more than the output: its keys go
in blocks of 512, its exp is a fast approximation (relative error about 1e-4), and the
probabilities are rounded to the input type before they weight the values. aotc rounds at
the same points, so on the ISA build PyTorch itself dispatches to here almost every output
element equals eager's (the rest differ by the order of float sums); before, about one in
five did, and a bfloat16 result could miss eager's by more than 1e-2.
"""
from __future__ import annotations

import pytest
import torch

from aotc.target import target_for
from aotc.target.host import missing_features
from models import SDPA

HALF = [torch.float16, torch.bfloat16]
TOL = {"atol": 1e-2, "rtol": 1e-2}
# PyTorch's kernel dispatch level -> the aotc build with the same vectors
TORCH_ISA = {"AVX512": "avx512", "AVX2": "avx2", "DEFAULT": "sse2"}


def _bool_mask(q_len, kv_len, gen, dtype):
    return torch.rand(q_len, kv_len, generator=gen) > 0.3


def _half_mask(q_len, kv_len, gen, dtype):
    return torch.randn(1, 1, q_len, kv_len, generator=gen).to(dtype)


def _float32_mask(q_len, kv_len, gen, dtype):
    return torch.randn(q_len, kv_len, generator=gen)


# name -> (q shape, k/v shape, sdpa kwargs, mask maker, value head dim or None): head dims
# 64, 80, 96, 128; odd lengths, q_len != kv_len, keys past one 512-key block
FLASH_CASES = {
    "d96": ((2, 8, 128, 96), (2, 8, 128, 96), {}, None),
    "odd_lengths_d64": ((1, 4, 37, 64), (1, 4, 53, 64), {}, None),
    "keys_past_one_block_d80": ((1, 2, 70, 80), (1, 2, 600, 80), {}, None),
    "causal_d128": ((1, 2, 64, 128), (1, 2, 64, 128), {"is_causal": True}, None),
    "causal_fewer_queries_d96": ((1, 2, 45, 96), (1, 2, 77, 96), {"is_causal": True}, None),
    "bool_mask_d64": ((1, 2, 40, 64), (1, 2, 41, 64), {}, _bool_mask),
    "half_mask_long_keys_d80": ((2, 2, 33, 80), (2, 2, 530, 80), {}, _half_mask),
    "float32_mask_d64": ((1, 2, 40, 64), (1, 2, 40, 64), {}, _float32_mask),
    "gqa_d64": ((1, 8, 50, 64), (1, 2, 50, 64), {"enable_gqa": True}, None),
}


def _inputs(case, dtype, seed):
    q_shape, kv_shape, _, mask = case
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(*s, generator=gen).to(dtype) for s in (q_shape, kv_shape, kv_shape))
    return [q, k, v] + ([mask(q_shape[-2], kv_shape[-2], gen, dtype)] if mask else [])


def _check(model, ep, args, exact: bool):
    out, ref = model(*args), ep.module()(*args)
    assert out.dtype is ref.dtype
    torch.testing.assert_close(out, ref, **TOL)
    if exact:  # eager's rounding points: only the order of float sums differs
        differ = (out != ref).float().mean().item()
        assert differ < 0.01, f"{differ:.2%} of the elements differ from eager's"


def _host_matches_torch() -> bool:
    return TORCH_ISA.get(torch.backends.cpu.get_cpu_capability()) == target_for(None).isa


@pytest.mark.parametrize("dtype", HALF, ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("name", sorted(FLASH_CASES))
def test_half_sdpa_rounds_as_eager_flash_kernel(compile_model, tmp_path, name, dtype):
    case = FLASH_CASES[name]
    args = _inputs(case, dtype, 0)
    assert torch._fused_sdp_choice(*args, **case[2]) == 1  # eager's flash kernel runs it
    ep, model = compile_model(SDPA(**case[2]), args, options={"debug_dir": tmp_path / "dbg"})
    ir = (tmp_path / "dbg" / "model" / "00_import.txt").read_text()
    assert f"flash probs={str(dtype)[6:]}" in ir
    for seed in range(3):
        _check(model, ep, _inputs(case, dtype, seed), _host_matches_torch())


@pytest.mark.parametrize("dtype", HALF, ids=lambda d: str(d)[6:])
def test_half_decode_step_reads_keys_and_values_in_place(compile_model, tmp_path, dtype):
    """One query against a cache past one 512-key block, grouped heads: the kernel reads the
    key and value rows where they are (no packing for so few queries). The rounding points
    are the flash kernel's; the dot products sum in another order than eager's for a single
    query (as the packed path does too), so the check is the tolerance alone."""
    case = ((1, 8, 1, 64), (1, 2, 600, 64), {"enable_gqa": True}, None)
    args = _inputs(case, dtype, 0)
    ep, model = compile_model(SDPA(**case[2]), args, options={"debug_dir": tmp_path / "dbg"})
    assert f"flash probs={str(dtype)[6:]}" in (tmp_path / "dbg" / "model" / "00_import.txt"
                                               ).read_text()
    for seed in range(3):
        _check(model, ep, _inputs(case, dtype, seed), exact=False)


# calls eager's flash kernel does not take (a value head dim of its own, 3-D inputs): its
# math path computes in float32 and rounds once, as aotc's float32 template
MATH_CASES = {
    "value_dim_differs": ((1, 2, 40, 64), (1, 2, 50, 64), {}, None),
    "three_dims": ((4, 33, 80), (4, 47, 80), {"is_causal": True}, None),
}


@pytest.mark.parametrize("dtype", HALF, ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("name", sorted(MATH_CASES))
def test_half_sdpa_on_eager_math_path_rounds_once(compile_model, tmp_path, name, dtype):
    q_shape, kv_shape, kwargs, _ = MATH_CASES[name]
    gen = torch.Generator().manual_seed(0)

    def inputs():
        v_shape = kv_shape[:-1] + (32,) if name == "value_dim_differs" else kv_shape
        return [torch.randn(*s, generator=gen).to(dtype) for s in (q_shape, kv_shape, v_shape)]

    args = inputs()
    assert torch._fused_sdp_choice(*args, **kwargs) == 0  # eager's math path
    ep, model = compile_model(SDPA(**kwargs), args, options={"debug_dir": tmp_path / "dbg"})
    ir = (tmp_path / "dbg" / "model" / "00_import.txt").read_text()
    assert "attention[" in ir and "flash" not in ir
    for _ in range(3):
        _check(model, ep, inputs(), exact=True)


@pytest.mark.parametrize("isa", [i for i in ("avx512", "avx2", "sse2")
                                 if not missing_features(target_for(i))])
@pytest.mark.parametrize("dtype", HALF, ids=lambda d: str(d)[6:])
def test_half_sdpa_on_every_isa_build(compile_model, dtype, isa):
    case = FLASH_CASES["keys_past_one_block_d80"]
    ep, model = compile_model(SDPA(), _inputs(case, dtype, 0), options={"isa": isa})
    for seed in range(2):
        # bit agreement only where the build's vectors are the ones eager dispatches to
        matches = TORCH_ISA.get(torch.backends.cpu.get_cpu_capability()) == isa
        _check(model, ep, _inputs(case, dtype, seed), matches)
