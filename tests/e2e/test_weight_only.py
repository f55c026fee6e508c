"""torchao's weight-only quantized linears (Int8WeightOnlyConfig, IntxWeightOnlyConfig int4)
compiled onto kernels/gemm_wo.cpp (int8) and gemm_w4.cpp (int4, stored two values a byte):
the generated C++ calls them for every linear and no weight is stored dequantized, with
freezing or without; a decoder-shaped block on a [1, T, K] input against eager (widths of
whole 64s: the bfloat16 form of the int4 GEMV where the CPU has it); its int4 package run by
the numpy-only runtime; an int4 weight swapped by load_constants and packed as it is stored,
or refused with values past -8..7; an int4 weight holding such values at compile time kept a
byte a value; a dynamic batch; row-strided and transposed inputs."""
from __future__ import annotations

import json
import re
import warnings
import zipfile

import numpy as np
import pytest
import torch

import aotc

torchao = pytest.importorskip("torchao")


def configs() -> dict:
    from torchao.quantization import Int8WeightOnlyConfig, IntxWeightOnlyConfig
    from torchao.quantization.granularity import PerGroup

    return {"int8": Int8WeightOnlyConfig(),
            "int4": IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32))}


class Decoder(torch.nn.Module):
    """A decoder block's linears, odd widths: q/k/v and out projections, a SiLU-gated MLP."""

    def __init__(self, dim=96, hidden=160, kv=45):
        super().__init__()
        self.q, self.out = torch.nn.Linear(dim, dim), torch.nn.Linear(dim, dim, bias=False)
        self.k, self.v = torch.nn.Linear(dim, kv, bias=False), torch.nn.Linear(dim, kv)
        self.gate = torch.nn.Linear(dim, hidden, bias=False)
        self.up = torch.nn.Linear(dim, hidden, bias=False)
        self.down = torch.nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        h = x + self.out(self.q(x)) + (self.k(x) * self.v(x)).sum(-1, keepdim=True)
        return h + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))


def quantized(module: torch.nn.Module, name: str, x, dynamic_shapes=None):
    """`module` quantized by torchao's `name` config, exported on x (a tensor or a tuple)."""
    from torchao.quantization import quantize_

    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_(module.eval(), configs()[name])
    with torch.no_grad():
        return torch.export.export(module, x if isinstance(x, tuple) else (x,),
                                   dynamic_shapes=dynamic_shapes)


def compiled(ep, tmp_path, freezing=True):
    path = aotc.compile_and_package(ep, package_path=tmp_path / "wo.pt2",
                                    options={"freezing": freezing, "debug_dir": tmp_path / "dbg"})
    with zipfile.ZipFile(path) as z:
        meta = next(n for n in z.namelist() if n.endswith("metadata.json"))
        constants = json.loads(z.read(meta))["constants"]
    code = (tmp_path / "dbg" / "model" / "07_codegen.cpp").read_text()
    return path, aotc.load_package(path), code, constants


# the call each config's linears compile to
KERNEL = {"int8": "aotc_gemm_wo_f32(", "int4": "aotc_gemm_w4_f32("}


def assert_close_to_largest(got, want):
    torch.testing.assert_close(got, want, atol=1e-4 * float(want.abs().max()), rtol=1e-4)


@pytest.mark.parametrize("freezing", [True, False])
@pytest.mark.parametrize("name", ["int8", "int4"])
def test_every_linear_runs_the_weight_only_kernel(tmp_path, name, freezing):
    torch.manual_seed(0)
    x = torch.randn(3, 96)
    ep = quantized(Decoder(), name, x)
    _, model, code, constants = compiled(ep, tmp_path, freezing)
    assert code.count(KERNEL[name]) == 7
    assert not re.search(r"aotc_sgemm\w*\(", code)  # no float GEMM of a dequantized weight
    by_name = {c["name"]: c for c in constants}
    for layer in ("q", "k", "v", "out", "gate", "up", "down"):
        qdata = by_name[f"{layer}.weight.qdata"]
        assert qdata["dtype"] == "int8" and qdata.get("stored", True)
        if name == "int4":  # two values a byte
            n, k = qdata["sizes"]
            assert qdata["packing"] == {"layout": "int4_nibbles", "k": k, "n": n}
            assert qdata["nbytes"] == n * k // 2
    # nothing folded into a float copy of a weight: the only float constants are the
    # scales and biases themselves
    for c in constants:
        if c["dtype"] == "float32" and c.get("stored", True):
            assert c["name"].endswith((".scale", ".bias")), c["name"]
    for k in range(3):
        assert_close_to_largest(model(x), ep.module()(x))
        x = torch.randn(3, 96) * (k + 2)


@pytest.mark.parametrize("name", ["int8", "int4"])
@pytest.mark.parametrize("tokens", [1, 7, 40])  # 40: a prefill, by dequantized panels
@pytest.mark.parametrize("dim,hidden,kv", [(96, 160, 45), (128, 192, 64)])
def test_decoder_batch_one(tmp_path, name, tokens, dim, hidden, kv):
    torch.manual_seed(1)
    x = torch.randn(1, tokens, dim)
    ep = quantized(Decoder(dim, hidden, kv), name, x)
    _, model, code, _ = compiled(ep, tmp_path)
    assert code.count(KERNEL[name]) == 7
    for k in range(2):
        assert_close_to_largest(model(x), ep.module()(x))
        x = torch.randn(1, tokens, dim) * (k + 2)


def test_int4_package_runs_without_torch(tmp_path):
    from numpy_only import run_without_torch

    torch.manual_seed(2)
    x = torch.randn(1, 5, 96)
    ep = quantized(Decoder(), "int4", x)
    path, _, _, _ = compiled(ep, tmp_path)
    xs = [x.numpy(), (torch.randn(1, 5, 96) * 3).numpy()]
    for a, outs in zip(xs, run_without_torch(path, [[a] for a in xs], tmp_path / "run")):
        assert_close_to_largest(torch.from_numpy(np.asarray(outs[0])),
                                ep.module()(torch.from_numpy(a)))


def test_swapped_int4_weight_is_packed_as_stored(tmp_path):
    torch.manual_seed(3)
    x = torch.randn(1, 96)
    ep = quantized(Decoder(), "int4", x)
    _, model, _, _ = compiled(ep, tmp_path)
    before = model(x)
    w = ep.state_dict["down.weight"]
    flipped = (-w.qdata).clamp(-8, 7)
    model.load_constants({"down.weight.qdata": flipped}, check_full_update=False)
    w.qdata.copy_(flipped)  # the eager model reads the same new values
    assert_close_to_largest(model(x), ep.module()(x))
    assert not torch.allclose(model(x), before)  # the swap reached the kernel


def test_swapped_int4_weight_outside_int4_is_refused(tmp_path):
    torch.manual_seed(3)
    x = torch.randn(1, 96)
    ep = quantized(Decoder(), "int4", x)
    _, model, _, _ = compiled(ep, tmp_path)
    before = model(x)
    bad = ep.state_dict["down.weight"].qdata.clone()
    bad[3, 5], bad[0, 0] = 8, -100
    with pytest.raises(aotc.InputError, match=r"down\.weight\.qdata.*2 of the values lie "
                                              r"outside -8\.\.7"):
        model.load_constants({"down.weight.qdata": bad}, check_full_update=False)
    torch.testing.assert_close(model(x), before, rtol=0, atol=0)  # nothing swapped


def test_int4_weight_holding_other_values_stays_a_byte_a_value(tmp_path):
    """dequantize_affine reads q as it is, so a weight with a value past -8..7 (which
    torchao never writes, but a user may set) keeps its own bytes and eager's results."""
    from torchao.quantization import quantize_

    torch.manual_seed(6)
    module, x = Decoder().eval(), torch.randn(2, 96)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_(module, configs()["int4"])
    with torch.no_grad():
        module.down.weight.qdata[1, 2] = 11
        ep = torch.export.export(module, (x,))
    _, model, code, constants = compiled(ep, tmp_path)
    assert code.count("aotc_gemm_w4_f32(") == 6 and code.count("aotc_gemm_wo_f32(") == 1
    assert "packing" not in {c["name"]: c for c in constants}["down.weight.qdata"]
    assert_close_to_largest(model(x), ep.module()(x))


@pytest.mark.parametrize("name", ["int8", "int4"])
def test_dynamic_batch(tmp_path, name):
    torch.manual_seed(4)
    ep = quantized(Decoder(), name, torch.randn(3, 96), ({0: torch.export.Dim("b")},))
    _, model, code, _ = compiled(ep, tmp_path)
    assert code.count(KERNEL[name]) == 7
    for batch in (1, 5, 3, 20):  # 20 rows: the panel path, chosen at run time
        x = torch.randn(batch, 96)
        assert_close_to_largest(model(x), ep.module()(x))


class Views(torch.nn.Module):
    """Linears of a row-strided slice and of a transposed view of the input."""

    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(64, 33), torch.nn.Linear(64, 33)

    def forward(self, x, y):
        return self.a(x[:, 3:67]) + self.b(y.t())


@pytest.mark.parametrize("name", ["int8", "int4"])
def test_strided_and_transposed_inputs(tmp_path, name):
    torch.manual_seed(5)
    args = (torch.randn(5, 70), torch.randn(64, 5))
    ep = quantized(Views(), name, args)
    _, model, code, _ = compiled(ep, tmp_path)
    assert code.count(KERNEL[name]) == 2
    assert_close_to_largest(model(*args), ep.module()(*args))

