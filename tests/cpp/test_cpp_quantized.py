"""Quantized packages from the C++ runtime, without Python or libtorch in the process: an
int8 product (aten._int_mm on the int8 kernel) and a torchao int4 weight-only MLP, against
eager; an int4 weight swapped by load_constants (packed two values a byte, or refused)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from test_cpp_runtime import run_model

import aotc


class IntMM(torch.nn.Module):
    def forward(self, a, b):
        return torch._int_mm(a, b)


def test_int_mm_from_cpp(test_programs, tmp_path):
    g = torch.Generator().manual_seed(0)
    a = torch.randint(0, 256, (19, 70), generator=g, dtype=torch.uint8)
    b = torch.randint(-128, 128, (70, 21), generator=g, dtype=torch.int8)
    ep = torch.export.export(IntMM(), (a, b))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "mm.pt2")
    proc, outs = run_model(test_programs, path, "model", [a.numpy(), b.numpy()], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    np.testing.assert_array_equal(outs[0], ep.module()(a, b).numpy())


def test_int4_weight_only_from_cpp(test_programs, tmp_path):
    pytest.importorskip("torchao")
    from torchao.quantization import IntxWeightOnlyConfig, quantize_
    from torchao.quantization.granularity import PerGroup

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.ReLU(), torch.nn.Linear(96, 8))
    quantize_(model, IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32)))
    x = torch.randn(5, 64)
    with torch.no_grad():
        ep = torch.export.export(model.eval(), (x,))
        path = aotc.compile_and_package(ep, package_path=tmp_path / "int4.pt2")
        want = ep.module()(x).numpy()
    proc, outs = run_model(test_programs, path, "model", [x.numpy()], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    np.testing.assert_allclose(outs[0], want, rtol=0, atol=0.01 * np.abs(want).max())


def test_int4_weight_swapped_from_cpp(test_programs, tmp_path):
    """load_constants of an int4 weight stored two values a byte: packed as Python packs it,
    and refused, naming the constant, with a value past -8..7."""
    pytest.importorskip("torchao")
    from raw_tensors import write_raw
    from torchao.quantization import IntxWeightOnlyConfig, quantize_
    from torchao.quantization.granularity import PerGroup

    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(128, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    quantize_(model, IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32)))
    x = torch.randn(1, 128)
    with torch.no_grad():
        ep = torch.export.export(model.eval(), (x,))
        path = aotc.compile_and_package(ep, package_path=tmp_path / "int4.pt2")
    value = (-ep.state_dict["0.weight"].qdata).clamp(-8, 7).numpy()
    python = aotc.load_package(path)
    python.load_constants({"0.weight.qdata": value}, check_full_update=False)
    flags = ["--swap", "0.weight.qdata", write_raw(tmp_path / "q.raw", value)]
    proc, outs = run_model(test_programs, path, "model", [x.numpy()], tmp_path, *flags)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    np.testing.assert_array_equal(outs[0], python(x.numpy()))
    value[2, 7] = 9
    flags = ["--swap", "0.weight.qdata", write_raw(tmp_path / "bad.raw", value)]
    proc, _ = run_model(test_programs, path, "model", [x.numpy()], tmp_path, *flags)
    assert proc.returncode != 0
    assert "load_constants: '0.weight.qdata': 1 of the values lie outside -8..7" in (
        proc.stdout + proc.stderr)


def test_pt2e_int8_conv_net_from_cpp(test_programs, tmp_path):
    """PT2E static int8 (X86InductorQuantizer) on the int8 GEMM: a convolution with batch
    norm and a residual block, run by the C++ runtime."""
    pytest.importorskip("torchao")
    from quantized_models import conv_net_int8

    ep, batches = conv_net_int8()
    path = aotc.compile_and_package(ep, package_path=tmp_path / "pt2e.pt2",
                                    options={"int8_kernels": "on"})
    x = batches[-1]
    want = ep.module()(x).detach().numpy()
    proc, outs = run_model(test_programs, path, "model", [x.numpy()], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    np.testing.assert_allclose(outs[0], want, rtol=0, atol=0.01 * np.abs(want).max())
