"""Quantized models against the quantized module run eagerly: PT2E static int8
(X86InductorQuantizer) on a conv net and an encoder layer, torchao's quantize_ configs on an
MLP, with and without freezing (folded, dequantized weights or the quantize ops compiled);
a package of int4 weights run by the numpy-only runtime; quantized ops aotc has no rule for
raise UnsupportedOperatorError naming them."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import aotc
from aotc.errors import UnsupportedOperatorError

torchao = pytest.importorskip("torchao")


def assert_close_to_largest(got: torch.Tensor, want: torch.Tensor) -> None:
    """Float outputs within 1% of the largest magnitude expected: a value on a rounding
    boundary of a quantize step may land one quantum off, as float sums differ in order."""
    atol = 0.01 * float(want.detach().abs().max())
    torch.testing.assert_close(got, want, atol=atol, rtol=0)


class ConvNet(torch.nn.Module):
    """conv + batchnorm + relu, then a residual block whose add reads the quantized input."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.head = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv1(x)))
        return self.head(torch.relu(self.conv2(y) + y))


class EncoderLayer(torch.nn.Module):
    """One attention head through explicit matmuls and softmax, then a ReLU MLP."""

    def __init__(self, dim=32, hidden=64):
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(dim, dim) for _ in range(3))
        self.out = torch.nn.Linear(dim, dim)
        self.up, self.down = torch.nn.Linear(dim, hidden), torch.nn.Linear(hidden, dim)
        self.scale = dim ** -0.5

    def forward(self, x):
        att = torch.softmax(self.q(x) @ self.k(x).transpose(-1, -2) * self.scale, dim=-1)
        h = x + self.out(att @ self.v(x))
        return h + self.down(torch.relu(self.up(h)))


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(64, 128), torch.nn.Linear(128, 32)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def pt2e_static_int8(module: torch.nn.Module, example: torch.Tensor,
                     calibration: list[torch.Tensor]) -> torch.export.ExportedProgram:
    """X86InductorQuantizer's default static int8 scheme, calibrated, exported again."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as xiq

    quantizer = xiq.X86InductorQuantizer()
    quantizer.set_global(xiq.get_default_x86_inductor_quantization_config())
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepared = prepare_pt2e(torch.export.export(module.eval(), (example,)).module(),
                                quantizer)
        for batch in calibration:
            prepared(batch)
        return torch.export.export(convert_pt2e(prepared), (example,))


def torchao_quantized(config) -> tuple[torch.export.ExportedProgram, torch.Tensor]:
    from torchao.quantization import quantize_

    torch.manual_seed(0)
    model = MLP().eval()
    quantize_(model, config)
    x = torch.randn(4, 64)
    with torch.no_grad():
        return torch.export.export(model, (x,)), x


def compile_ep(ep, tmp_path, freezing: bool = True):
    path = aotc.compile_and_package(ep, package_path=tmp_path / "q.pt2",
                                    options={"freezing": freezing})
    return path, aotc.load_package(path)


def quant_ops(ep) -> set[str]:
    """The quantize ops and integer GEMMs in the exported graph, by name."""
    return {str(n.target) for n in ep.graph.nodes if n.op == "call_function"
            and str(n.target).startswith(("quantized_decomposed.", "torchao.", "aten._int_mm"))}


@pytest.mark.parametrize("freezing", [True, False])
def test_pt2e_conv_net(tmp_path, freezing):
    torch.manual_seed(0)
    batches = [torch.randn(2, 3, 12, 12) for _ in range(3)]
    model = ConvNet()
    with torch.no_grad():  # batchnorm statistics of their own, not the identity
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 2.0)
    ep = pt2e_static_int8(model, batches[0], batches[:2])
    assert {"quantized_decomposed.quantize_per_tensor.default",
            "quantized_decomposed.dequantize_per_channel.default"} <= quant_ops(ep)
    _, compiled = compile_ep(ep, tmp_path, freezing)
    for x in batches:
        assert_close_to_largest(compiled(x), ep.module()(x))


def test_pt2e_encoder_layer(tmp_path):
    torch.manual_seed(0)
    batches = [torch.randn(2, 10, 32) for _ in range(3)]
    ep = pt2e_static_int8(EncoderLayer(), batches[0], batches[:2])
    assert {"quantized_decomposed.quantize_per_tensor.default",
            "quantized_decomposed.dequantize_per_channel.default"} <= quant_ops(ep)
    _, compiled = compile_ep(ep, tmp_path)
    for x in batches:
        assert_close_to_largest(compiled(x), ep.module()(x))


def configs() -> dict:
    from torchao.quantization import (
        Int8DynamicActivationInt8WeightConfig,
        Int8WeightOnlyConfig,
        IntxWeightOnlyConfig,
    )
    from torchao.quantization.granularity import PerGroup

    return {"int8_dynamic": (Int8DynamicActivationInt8WeightConfig(),
                             {"torchao.choose_qparams_affine.default", "aten._int_mm.default"}),
            "int8_weight_only": (Int8WeightOnlyConfig(), set()),
            "int4_weight_only": (IntxWeightOnlyConfig(weight_dtype=torch.int4,
                                                      granularity=PerGroup(32)),
                                 {"torchao.dequantize_affine.default"})}


@pytest.mark.parametrize("freezing", [True, False])
@pytest.mark.parametrize("name", ["int8_dynamic", "int8_weight_only", "int4_weight_only"])
def test_torchao_config(tmp_path, name, freezing):
    config, expected_ops = configs()[name]
    ep, x = torchao_quantized(config)
    assert expected_ops <= quant_ops(ep)
    _, compiled = compile_ep(ep, tmp_path, freezing)
    for k in range(3):
        assert_close_to_largest(compiled(x), ep.module()(x))
        x = torch.randn(4, 64) * (k + 2)


def test_subclass_weights_are_stored_flat(tmp_path):
    """Each inner tensor of a torchao weight is a constant under its own name."""
    import json
    import zipfile

    ep, _ = torchao_quantized(configs()["int4_weight_only"][0])
    path, _ = compile_ep(ep, tmp_path, freezing=False)
    with zipfile.ZipFile(path) as z:
        meta = next(n for n in z.namelist() if n.endswith("metadata.json"))
        constants = {c["name"]: c for c in json.loads(z.read(meta))["constants"]}
    assert {"a.weight.qdata", "a.weight.scale", "a.weight.zero_point", "b.weight.qdata"} \
        <= set(constants)
    assert constants["a.weight.qdata"]["dtype"] == "int8"
    assert constants["a.weight.qdata"]["sizes"] == [128, 64]


def test_quantized_package_runs_without_torch(tmp_path):
    from numpy_only import run_without_torch

    ep, x = torchao_quantized(configs()["int4_weight_only"][0])
    path, _ = compile_ep(ep, tmp_path, freezing=False)
    xs = [x.numpy(), (torch.randn(4, 64) * 3).numpy()]
    results = run_without_torch(path, [[a] for a in xs], tmp_path / "run")
    for a, outs in zip(xs, results):
        assert_close_to_largest(torch.from_numpy(np.asarray(outs[0])),
                                ep.module()(torch.from_numpy(a)))


class Float8(torch.nn.Module):
    def forward(self, x, scale):
        return torch.ops.torchao.quantize_affine_float8_non_decomposed(x, scale,
                                                                        torch.float8_e4m3fn)


def test_unknown_torchao_op_is_a_typed_error(tmp_path):
    ep = torch.export.export(Float8(), (torch.randn(4, 8), torch.tensor([0.1])))
    with pytest.raises(UnsupportedOperatorError,
                       match="torchao.quantize_affine_float8_non_decomposed.default"):
        aotc.compile_and_package(ep, package_path=tmp_path / "f8.pt2")


@pytest.fixture(scope="module")
def unknown_quantized_op():
    """A quantized_decomposed op torch has no Python kernel for, as a newer torch might add."""
    lib = torch.library.Library("quantized_decomposed", "FRAGMENT")
    lib.define("requantize_test_only(Tensor input, float scale) -> Tensor")
    lib.impl("requantize_test_only", lambda x, s: torch.round(x / s), "CompositeExplicitAutograd")
    lib.impl("requantize_test_only", lambda x, s: torch.empty_like(x), "Meta")
    yield torch.ops.quantized_decomposed.requantize_test_only.default
    lib._destroy()


def test_unknown_quantized_decomposed_op_is_a_typed_error(tmp_path, unknown_quantized_op):
    class Requantize(torch.nn.Module):
        def forward(self, x):
            return unknown_quantized_op(x, 0.5)

    ep = torch.export.export(Requantize(), (torch.randn(4, 8),))
    with pytest.raises(UnsupportedOperatorError,
                       match="quantized_decomposed.requantize_test_only.default"):
        aotc.compile_and_package(ep, package_path=tmp_path / "rq.pt2")
