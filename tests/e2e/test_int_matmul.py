"""aten._int_mm as the IntMatmul template (kernels/gemm_int8.cpp): exact int32 products
against eager for int8 and uint8 activations, strided and transposed operands, dynamic
rows, at every x86 level this CPU runs (the C++ runtime: tests/cpp/test_cpp_quantized.py)."""
from __future__ import annotations

import pytest
import torch

from aotc.passes.pipeline import compile_program
from aotc.target import host_target, target_for


class IntMM(torch.nn.Module):
    def forward(self, a, b):
        return torch._int_mm(a, b)


class Strided(torch.nn.Module):
    """A read through a transpose (columns not adjacent: copied for the kernel), B
    transposed and sliced."""

    def forward(self, at, bt):
        return torch._int_mm(at.t(), bt[8:].t())


def _ints(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    lo, hi = (0, 256) if dtype is torch.uint8 else (-128, 128)
    return torch.randint(lo, hi, shape, generator=g, dtype=dtype)


@pytest.mark.parametrize("isa", ["avx512", "avx2", "sse2"])
@pytest.mark.parametrize("a_dtype", [torch.int8, torch.uint8])
def test_int_mm_is_exact_at_every_level(compile_model, isa, a_dtype):
    if isa == "avx512" and not {"avx512f", "avx512bw"} <= _flags():
        pytest.skip("this CPU has no AVX-512")
    if isa == "avx2" and "avx2" not in _flags():
        pytest.skip("this CPU has no AVX2")
    a, b = _ints((37, 259), a_dtype, 1), _ints((259, 40), torch.int8, 2)
    a[0] = 255 if a_dtype is torch.uint8 else -128  # past int16 in a pair of products
    b[:, 0] = -128
    ep, model = compile_model(IntMM(), (a, b), options={"isa": isa})
    got = model(a, b)
    assert got.dtype == torch.int32
    torch.testing.assert_close(got, ep.module()(a, b), rtol=0, atol=0)


def _flags() -> set[str]:
    from aotc.target.host import cpu_flags

    return set(cpu_flags())


def test_strided_operands(compile_model):
    at, bt = _ints((64, 5), torch.int8, 3), _ints((30, 64), torch.int8, 4)
    ep, model = compile_model(Strided(), (at, bt))
    torch.testing.assert_close(model(at, bt), ep.module()(at, bt), rtol=0, atol=0)


def test_dynamic_rows(compile_model):
    rows = torch.export.Dim("rows", min=1, max=1024)
    a, b = _ints((8, 96), torch.int8, 5), _ints((96, 33), torch.int8, 6)
    ep, model = compile_model(IntMM(), (a, b), dynamic_shapes=({0: rows}, None))
    for m in (1, 3, 64, 65, 300):
        x = _ints((m, 96), torch.int8, m)
        torch.testing.assert_close(model(x, b), ep.module()(x, b), rtol=0, atol=0)


def test_lowered_to_the_integer_kernel():
    a, b = _ints((4, 16), torch.int8, 7), _ints((16, 8), torch.int8, 8)
    for target in (host_target(), target_for("neon")):
        source = compile_program(torch.export.export(IntMM(), (a, b)), target,
                                 build=False).source
        assert "aotc_qgemm_pack_b(16, 8," in source and "aotc_qgemm_s32(4, 8, 16," in source


class Weighted(torch.nn.Module):
    """A constant int8 weight read transposed (as torchao's int8 linears read theirs)."""

    def __init__(self, k=70, n=45):
        super().__init__()
        self.register_buffer("w", _ints((n, k), torch.int8, 9))

    def forward(self, a):
        return torch._int_mm(a, self.w.t())


def test_a_constant_weight_is_stored_packed(compile_model, tmp_path):
    import json
    import zipfile

    a = _ints((9, 70), torch.uint8, 10)
    ep, model = compile_model(Weighted(), (a,), options={"freezing": False})
    torch.testing.assert_close(model(a), ep.module()(a), rtol=0, atol=0)
    with zipfile.ZipFile(tmp_path / "model.pt2") as z:
        meta = json.loads(z.read(next(n for n in z.namelist() if n.endswith("metadata.json"))))
        source = z.read(next(n for n in z.namelist() if n.endswith("model.cpp"))).decode()
    (w,) = [c for c in meta["constants"] if c["name"] == "w"]
    assert w["packing"] == {"layout": "int8_dot_groups16", "k": 70, "n": 45, "offset": 0,
                            "sb_k": 1, "sb_n": 70, "taps": 1, "row_taps": 0}
    assert w["nbytes"] == 3 * 32 * 64 + 3 * 64  # 18 groups of 4 rows padded to 32
    assert "aotc_qgemm_pack_b(70, 45, static_cast<const int8_t *>(src)" in source  # swaps
    assert source.count("aotc_qgemm_pack_b(") == 1  # and no call packs it


def test_a_swapped_weight_is_packed_again(compile_model):
    a = _ints((9, 70), torch.uint8, 11)
    module = Weighted()
    ep, model = compile_model(module, (a,), options={"freezing": False})
    new = _ints((45, 70), torch.int8, 12)
    model.load_constants({"w": new}, check_full_update=False)
    torch.testing.assert_close(model(a), torch._int_mm(a, new.t()), rtol=0, atol=0)


def test_packed_weight_without_torch(compile_model, tmp_path):
    from numpy_only import run_without_torch

    a = _ints((9, 70), torch.uint8, 13)
    ep, _ = compile_model(Weighted(), (a,), options={"freezing": False})
    (outs,) = run_without_torch(tmp_path / "model.pt2", [[a.numpy()]], tmp_path / "run")
    torch.testing.assert_close(torch.from_numpy(outs[0]), ep.module()(a), rtol=0, atol=0)
