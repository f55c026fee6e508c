"""A half model's weights on the packed GEMM: a float16 or bfloat16 linear weight is stored
packed from its own values (bfloat16 panels for the bf16 kernel where this CPU has it, float32
panels otherwise), never widened into a float32 copy on every call; an embedding reads only
the rows it gathers. Compared with eager at the half tolerances, also after a swap."""
from __future__ import annotations

import pytest
import torch

from aotc.target import target_for
from aotc.target.host import has_bf16_dot_products

HALF = [torch.float16, torch.bfloat16]
TOL = {torch.float16: 1e-2, torch.bfloat16: 5e-2}


class TinyLM(torch.nn.Module):
    """Embedding, two biased linears with a SiLU between, and a head."""

    def __init__(self, vocab=300, dim=48, hidden=80):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.up = torch.nn.Linear(dim, hidden)
        self.down = torch.nn.Linear(hidden, dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        h = self.embed(ids)
        return self.head(h + self.down(torch.nn.functional.silu(self.up(h))))


def _expected_panels(dtype) -> str:
    bf16 = dtype is torch.bfloat16 and has_bf16_dot_products(target_for(None))
    return "bfloat16" if bf16 else "float32"


def _compile(compile_model, tmp_path, dtype):
    torch.manual_seed(0)
    module = TinyLM().to(dtype)
    ids = torch.randint(0, 300, (2, 7))
    ep, model = compile_model(module, (ids,), options={"debug_dir": tmp_path / "dbg"})
    return module, ids, ep, model


@pytest.mark.parametrize("dtype", HALF, ids=lambda d: str(d)[6:])
def test_half_weights_are_packed_once(compile_model, tmp_path, dtype):
    module, ids, ep, model = _compile(compile_model, tmp_path, dtype)
    torch.testing.assert_close(model(ids), ep.module()(ids), atol=TOL[dtype], rtol=TOL[dtype])
    table = {c["name"]: c for c in model.package_metadata["constants"]}
    for name in ("up.weight", "down.weight", "head.weight"):
        assert table[name]["dtype"] == str(dtype)[6:]
        assert table[name]["packing"]["dtype"] == _expected_panels(dtype), name
    assert "packing" not in table["embed.weight"]
    ir = (tmp_path / "dbg" / "model" / "03_prepack.txt").read_text()
    # no float32 copy of a weight, nor of the embedding table: only the rows read are widened
    for shape in ("float32[80, 48]", "float32[48, 80]", "float32[300, 48]", "float32[48, 300]"):
        assert shape not in ir, shape
    needs = model.package_metadata["target"]["cpu_features"].split()
    assert ("avx512_bf16" in needs) == (_expected_panels(dtype) == "bfloat16")


@pytest.mark.parametrize("dtype", HALF, ids=lambda d: str(d)[6:])
def test_swapped_half_weights_are_packed_again(compile_model, tmp_path, dtype):
    module, ids, _, model = _compile(compile_model, tmp_path, dtype)
    torch.manual_seed(1)
    new = {name: torch.randn_like(p) * 0.1 for name, p in module.state_dict().items()}
    model.load_constants(new)
    module.load_state_dict(new)
    with torch.no_grad():
        want = module(ids)
    torch.testing.assert_close(model(ids), want, atol=TOL[dtype], rtol=TOL[dtype])


class Float32OverHalfWeight(torch.nn.Module):
    """float32 activations times a bfloat16 weight widened by the model itself."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(64, 40).to(torch.bfloat16))

    def forward(self, x):
        return x @ self.weight.float().t()


def test_float32_activations_keep_float32_products(compile_model):
    """The bf16 kernel rounds A to bfloat16: a float32 A never meets bfloat16 panels, so the
    product is float32's, as eager's."""
    torch.manual_seed(0)
    x = torch.randn(5, 40)
    ep, model = compile_model(Float32OverHalfWeight(), (x,))
    torch.testing.assert_close(model(x), ep.module()(x))
    packed = [c["packing"]["dtype"] for c in model.package_metadata["constants"]
              if "packing" in c]
    assert packed and "bfloat16" not in packed
