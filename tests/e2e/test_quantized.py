"""Quantized models against the quantized module run eagerly: PT2E static int8
(X86InductorQuantizer, XNNPACKQuantizer) on a conv net and an encoder layer, on the int8
GEMM and in their dequantized float form, torchao's quantize_ configs on an
MLP, with and without freezing (folded, dequantized weights or the quantize ops compiled);
a package of int4 weights run by the numpy-only runtime; quantized ops aotc has no rule for
raise UnsupportedOperatorError naming them."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from quantized_models import (
    MLP,
    DecoderLayer,
    EncoderLayer,
    assert_close_to_largest,
    conv_net_int8,
    downsampled_block_int8,
    pooled_conv_net_int8,
    pooled_head_int8,
    pt2e_static_int8,
)

import aotc
from aotc.errors import UnsupportedOperatorError

torchao = pytest.importorskip("torchao")


def torchao_quantized(config, model=None,
                      shape=(4, 64)) -> tuple[torch.export.ExportedProgram, torch.Tensor]:
    from torchao.quantization import quantize_

    torch.manual_seed(0)
    model = (model or MLP()).eval()
    quantize_(model, config)
    x = torch.randn(*shape)
    with torch.no_grad():
        return torch.export.export(model, (x,)), x


def compile_ep(ep, tmp_path, freezing: bool = True, int8_kernels: str = "auto"):
    path = aotc.compile_and_package(ep, package_path=tmp_path / "q.pt2",
                                    options={"freezing": freezing, "int8_kernels": int8_kernels,
                                             "debug_dir": str(tmp_path / "dump")})
    return path, aotc.load_package(path)


def integer_products(tmp_path) -> int:
    """How many int8 GEMM and implicit-GEMM convolution calls the last compile_ep's model
    makes."""
    code = (tmp_path / "dump" / "model" / "07_codegen.cpp").read_text()
    return code.count("aotc_qgemm_s32(") + code.count("aotc_qconv_s32(")


def fused_epilogues(tmp_path) -> int:
    """How many of those calls hand their sums to a fused epilogue (the dequantize, bias,
    residual, ReLU and requantize after the product) instead of storing them."""
    code = (tmp_path / "dump" / "model" / "07_codegen.cpp").read_text()
    return sum(1 for line in code.splitlines()
               if ("aotc_qgemm_s32(" in line or "aotc_qconv_s32(" in line)
               and "&epilogue_" in line)


def quant_ops(ep) -> set[str]:
    """The quantize ops and integer GEMMs in the exported graph, by name."""
    return {str(n.target) for n in ep.graph.nodes if n.op == "call_function"
            and str(n.target).startswith(("quantized_decomposed.", "torchao.", "aten._int_mm"))}


# int8_kernels "on": the products on the int8 GEMM (passes/quantized.py), "off": their
# dequantized float form (what "auto" picks on a CPU without VNNI)
@pytest.mark.parametrize("int8_kernels", ["on", "off"])
@pytest.mark.parametrize("quantizer,freezing", [("x86", True), ("x86", False),
                                                ("xnnpack", True)])
def test_pt2e_conv_net(tmp_path, quantizer, freezing, int8_kernels):
    ep, batches = conv_net_int8(quantizer)
    assert {"quantized_decomposed.quantize_per_tensor.default",
            "quantized_decomposed.dequantize_per_channel.default"} <= quant_ops(ep)
    _, compiled = compile_ep(ep, tmp_path, freezing, int8_kernels)
    assert integer_products(tmp_path) == (3 if int8_kernels == "on" else 0)
    # each convolution's epilogue runs in its kernel: requantized uint8 for the two inside
    # (the second with the residual add of the quantized input), float32 for the head
    assert fused_epilogues(tmp_path) == integer_products(tmp_path)
    for x in batches:
        assert_close_to_largest(compiled(x), ep.module()(x))


def test_activations_between_convolutions_are_channels_last(tmp_path):
    """scheduler/layout.py: the 8-bit activations between the convolutions are stored
    channels last, so that the second convolution reads its input in place (x_last) and the
    first writes channels last (c_last); the head, whose result is the output, writes
    channels first (int8 activations read in place: the downsampling block's xnnpack case)."""
    ep, batches = conv_net_int8("x86")
    _, compiled = compile_ep(ep, tmp_path, int8_kernels="on")
    ir = (tmp_path / "dump" / "model" / "02_fuse.txt").read_text()
    convs = [line for line in ir.splitlines() if "= int conv" in line]
    assert len(convs) == 3
    assert "[.., 3, 12, 12] x s8" in convs[0] and "-> s32 [.., 16]," in convs[0]
    assert "[.., 12, 12, 16] x s8" in convs[1] and "-> s32 [.., 16]," in convs[1]
    assert "[.., 12, 12, 16] x s8" in convs[2] and "-> s32 [.., 4, ..]" in convs[2]
    code = (tmp_path / "dump" / "model" / "07_codegen.cpp").read_text()
    geometries = [line.split("{")[1].split("}")[0] for line in code.splitlines()
                  if "geometry[16] =" in line]
    assert [g.split(", ")[-2:] for g in geometries] == [["0", "1"], ["1", "1"], ["1", "0"]]
    for x in batches:
        assert_close_to_largest(compiled(x), ep.module()(x))


@pytest.mark.parametrize("quantizer", ["x86", "xnnpack"])
def test_downsample_requantizes_in_its_kernel(tmp_path, quantizer):
    """The add of a downsampling block reads two convolutions' results; it runs as the
    epilogue of one, and the other's requantize (scheduler/fusion.py: split_narrowed_results)
    as that one's epilogue, which stores 8-bit values rather than its int32 sums."""
    ep, batches = downsampled_block_int8(quantizer)
    _, compiled = compile_ep(ep, tmp_path, int8_kernels="on")
    assert fused_epilogues(tmp_path) == integer_products(tmp_path) == 4
    ir = (tmp_path / "dump" / "model" / "02_fuse.txt").read_text()
    narrowed = [line for line in ir.splitlines() if "_narrowed" in line.split(":")[0]]
    assert len(narrowed) == 1 and "8[2, 6, 5, 32] = int conv" in narrowed[0]
    for x in batches:
        assert_close_to_largest(compiled(x), ep.module()(x))


def test_pooled_head_reads_channels_last(tmp_path):
    """A global average pool before a linear keeps the convolutions before it channels
    last: its result [n, c, 1, 1] lies in memory as [n, 1, 1, c] does, so the linear reads
    it either way, and the pool sums along the channels."""
    ep, batches = pooled_head_int8()
    _, compiled = compile_ep(ep, tmp_path, int8_kernels="on")
    ir = (tmp_path / "dump" / "model" / "02_fuse.txt").read_text()
    convs = [line for line in ir.splitlines() if "= int conv" in line]
    assert len(convs) == 2 and all("-> s32 [.., 32]" in c or "-> s32 [.., 16]" in c
                                   for c in convs)
    assert any(": float32[2, 1, 1, 32] = sum over (9, 11)" in line
               for line in ir.splitlines())
    for x in batches:
        assert_close_to_largest(compiled(x), ep.module()(x))


class _OneOutput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden, self.head = torch.nn.Linear(16, 32), torch.nn.Linear(32, 1)

    def forward(self, x):
        return self.head(torch.relu(self.hidden(x)))


def test_pt2e_linear_of_one_output(tmp_path):
    """A quantized linear with one output feature (a product of one column) hands its
    epilogue row-major blocks like any other."""
    torch.manual_seed(0)
    batches = [torch.randn(40, 16) for _ in range(3)]
    ep = pt2e_static_int8(_OneOutput(), batches[0], batches[:2])
    _, compiled = compile_ep(ep, tmp_path, int8_kernels="on")
    assert fused_epilogues(tmp_path) == integer_products(tmp_path) == 2
    for x in batches:
        assert_close_to_largest(compiled(x), ep.module()(x))


@pytest.mark.parametrize("quantizer", ["x86", "xnnpack"])
def test_pt2e_pooled_stem(tmp_path, quantizer):
    """The max pool between two quantized convolutions pools their uint8 values: the stem's
    epilogue writes 8-bit values and no float tensor lies between the two."""
    ep, batches = pooled_conv_net_int8(quantizer)
    _, compiled = compile_ep(ep, tmp_path, int8_kernels="on")
    assert fused_epilogues(tmp_path) == integer_products(tmp_path) == 2
    code = (tmp_path / "dump" / "model" / "07_codegen.cpp").read_text()
    assert "max_pool2d" in code and "float *__restrict out, const uint8_t" not in code
    for x in batches:
        assert_close_to_largest(compiled(x), ep.module()(x))


class Stem7(torch.nn.Module):
    """ResNet's stem: a 7x7 stride-2 convolution of 3 channels, batch norm and ReLU, then a
    1x1 head."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 7, stride=2, padding=3)
        self.bn = torch.nn.BatchNorm2d(16)
        self.head = torch.nn.Conv2d(16, 4, 1)

    def forward(self, x):
        return self.head(torch.relu(self.bn(self.conv(x))))


@pytest.mark.parametrize("quantizer", ["x86", "xnnpack"])
def test_pt2e_stem_by_kernel_rows(tmp_path, quantizer):
    """Built for AVX-512, the 7x7 stem's patches are gathered by kernel rows padded to whole
    groups (geometry order 2) and its weight packed so (aotc_qconv_pack_b_rows), for AVX2 a
    column at a time: both give the quantized module's outputs, also after load_constants
    swaps the stem's weight (packed again) and from the numpy-only runtime."""
    from numpy_only import run_without_torch

    from aotc.target.host import cpu_flags

    torch.manual_seed(0)
    batches = [torch.randn(2, 3, 37, 45) for _ in range(3)]
    ep = pt2e_static_int8(Stem7(), batches[0], batches[:2], quantizer)
    for isa in ["avx512", "avx2"]:
        path = aotc.compile_and_package(ep, package_path=tmp_path / f"{isa}.pt2", options={
            "isa": isa, "freezing": False, "int8_kernels": "on",
            "debug_dir": str(tmp_path / isa)})
        code = (tmp_path / isa / "model" / "07_codegen.cpp").read_text()
        rows = "aotc_qconv_pack_b_rows(147, 16, 7," in code
        order_2 = ", 7, 7, 19, 23, 2, 2, 3, 3, 1, 1, 2," in code  # geometry's order
        assert rows == order_2 == (isa == "avx512")
        if not {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= cpu_flags() and rows:
            continue  # built, not run here
        compiled = aotc.load_package(path)
        module = ep.module()
        for x in batches:
            assert_close_to_largest(compiled(x), module(x))
        name = next(n for n in compiled.constant_names()  # the stem's int8 weight
                    if "." not in n and getattr(module, n).dtype == torch.int8
                    and tuple(getattr(module, n).shape) == (16, 3, 7, 7))
        new = torch.randint(-127, 128, (16, 3, 7, 7), dtype=torch.int8,
                            generator=torch.Generator().manual_seed(1))
        compiled.load_constants({name: new}, check_full_update=False)
        setattr(module, name, new)
        want = module(batches[0])
        assert_close_to_largest(compiled(batches[0]), want)
        got = run_without_torch(path, [[batches[0].numpy()]], tmp_path / f"numpy_{isa}")
        assert_close_to_largest(torch.from_numpy(got[0][0]), ep.module()(batches[0]))


@pytest.mark.parametrize("int8_kernels", ["on", "off"])
@pytest.mark.parametrize("quantizer", ["x86", "xnnpack"])
def test_pt2e_encoder_layer(tmp_path, quantizer, int8_kernels):
    torch.manual_seed(0)
    batches = [torch.randn(2, 10, 32) for _ in range(3)]
    ep = pt2e_static_int8(EncoderLayer(), batches[0], batches[:2], quantizer)
    assert {"quantized_decomposed.quantize_per_tensor.default",
            "quantized_decomposed.dequantize_per_channel.default"} <= quant_ops(ep)
    _, compiled = compile_ep(ep, tmp_path, int8_kernels=int8_kernels)
    assert integer_products(tmp_path) == (6 if int8_kernels == "on" else 0)
    for x in batches:
        assert_close_to_largest(compiled(x), ep.module()(x))


@pytest.mark.parametrize("int8_kernels", ["on", "off"])
def test_pt2e_dynamic_encoder_layer(tmp_path, int8_kernels):
    """X86InductorQuantizer's dynamic scheme: each activation's scale and zero point chosen
    at run time (choose_qparams.tensor, one-element tensors). On the int8 GEMM the kernel
    reads the zero point and the epilogue the scale from those tensors; q, k and v read one
    dequantized activation, so all six products are integer. Eager multiplies by the
    scale's .item() in float32, and so does the package (a float64 scale would turn the
    layer float64)."""
    torch.manual_seed(0)
    batches = [torch.randn(2, 10, 32) for _ in range(3)]
    ep = pt2e_static_int8(EncoderLayer(), batches[0], batches[:2], "x86_dynamic")
    assert {"quantized_decomposed.choose_qparams.tensor",
            "quantized_decomposed.dequantize_per_tensor.tensor"} <= quant_ops(ep)
    _, compiled = compile_ep(ep, tmp_path, int8_kernels=int8_kernels)
    assert integer_products(tmp_path) == (6 if int8_kernels == "on" else 0)
    for x in batches:
        got, want = compiled(x), ep.module()(x)
        assert got.dtype == want.dtype == torch.float32
        assert_close_to_largest(got, want)


def test_pt2e_int8_weights_are_stored_int8(tmp_path):
    """On the int8 GEMM a quantized weight stays int8 (packed for the kernel): no float copy
    of it is stored in the package."""
    import json
    import zipfile

    ep, _ = conv_net_int8()
    path, _ = compile_ep(ep, tmp_path, int8_kernels="on")
    with zipfile.ZipFile(path) as z:
        meta = next(n for n in z.namelist() if n.endswith("metadata.json"))
        constants = json.loads(z.read(meta))["constants"]
    # the float parameters PT2E leaves unread beside their int8 form are not stored either
    float_4d = [c["name"] for c in constants if c["dtype"] == "float32"
                and len(c["sizes"]) == 4 and c["nbytes"]]
    assert not float_4d
    assert {c["dtype"] for c in constants if "frozen_param" in c["name"]} == {"int8"}


def test_pt2e_int8_weights_swap(tmp_path):
    """load_constants swaps a quantized weight and its scales under their names; the int8
    GEMM's packed copy is packed again."""
    ep, batches = conv_net_int8()
    _, compiled = compile_ep(ep, tmp_path, freezing=False, int8_kernels="on")
    g = torch.Generator().manual_seed(1)
    module = ep.module()
    # conv2's weight: packed tap-major again (aotc_qconv_pack_b)
    new = {"_frozen_param1": torch.randint(-127, 128, (16, 16, 3, 3), dtype=torch.int8,
                                           generator=g),
           "_scale_1": torch.rand(16, generator=g) * 0.01 + 0.001}
    assert set(new) <= set(compiled.constant_names())
    compiled.load_constants(new, check_full_update=False)
    for name, value in new.items():
        setattr(module, name, value)
    for x in batches:
        assert_close_to_largest(compiled(x), module(x))


def test_pt2e_int8_package_runs_without_torch(tmp_path):
    from numpy_only import run_without_torch

    ep, batches = conv_net_int8("xnnpack")
    path, _ = compile_ep(ep, tmp_path, int8_kernels="on")
    results = run_without_torch(path, [[x.numpy()] for x in batches], tmp_path / "run")
    for x, outs in zip(batches, results):
        assert_close_to_largest(torch.from_numpy(np.asarray(outs[0])), ep.module()(x))


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


@pytest.mark.parametrize("name", ["int8_dynamic", "int8_weight_only", "int4_weight_only"])
def test_torchao_decoder_layer(tmp_path, name):
    """A LLaMA-style decoder layer (GQA attention, SwiGLU) with every projection quantized."""
    torch.manual_seed(0)
    ep, x = torchao_quantized(configs()[name][0], DecoderLayer(), (1, 12, 64))
    _, compiled = compile_ep(ep, tmp_path)
    for k in range(2):
        assert_close_to_largest(compiled(x), ep.module()(x))
        x = torch.randn(1, 12, 64) * (k + 2)


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
