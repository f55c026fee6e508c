"""precision="bf16": GEMM weights prepacked as bfloat16 and multiplied with vdpbf16ps
(kernels/gemm_bf16.cpp, scheduler/precision.py). Each model is checked twice against eager
PyTorch: closely against eager on the operands rounded to bfloat16 (what the kernel
computes, with float32 sums), and loosely against eager in float32 (the accuracy cost)."""
from __future__ import annotations

import pytest
import torch

import aotc
from aotc.errors import CompileError, PackageError
from aotc.passes.pipeline import compile_program
from aotc.runtime.loader import _check_target
from aotc.target import host, target_for
from aotc.target.x86_64 import BF16_FEATURE

needs_bf16 = pytest.mark.skipif(BF16_FEATURE not in host.cpu_flags(),
                                reason=f"this CPU lacks {BF16_FEATURE}")


def _rounded(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.bfloat16).to(torch.float32)


class Odd(torch.nn.Module):
    """GEMMs whose M, N and K are not multiples of the 12x32 tile, K odd, then an epilogue."""

    def __init__(self, k=37, n=45):
        super().__init__()
        self.fc = torch.nn.Linear(k, n)

    def forward(self, x):
        return torch.nn.functional.gelu(self.fc(x)) * 0.5 + 1.0


class NoBiasMatmul(torch.nn.Module):
    """A weight read through matmul (no bias), on a batch of matrices, then relu."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(1031, 70) * 0.03)

    def forward(self, x):
        return torch.relu(x @ self.w)


def _compile(tmp_path, module, inputs, dynamic_shapes=None, name="m"):
    with torch.no_grad():
        ep = torch.export.export(module.eval(), inputs, dynamic_shapes=dynamic_shapes)
    path = aotc.compile_and_package(ep, tmp_path / f"{name}.pt2", options={"precision": "bf16"})
    return ep, aotc.load_package(path)


def _check(model, ep, module, inputs):
    """Close to eager on bfloat16-rounded operands; within bfloat16's error of fp32 eager."""
    with torch.no_grad():
        out = model(*inputs)
        torch.testing.assert_close(out, ep.module()(*inputs), rtol=3e-2, atol=3e-2)
        # the GEMM weights (2-D) are stored rounded; biases stay float32
        state = {k: _rounded(v) if v.dim() == 2 else v for k, v in module.state_dict().items()}
        rounded = torch.func.functional_call(module, state, tuple(_rounded(x) for x in inputs))
        torch.testing.assert_close(out, rounded, rtol=1e-4, atol=1e-4)


@needs_bf16
def test_odd_shapes_dynamic_rows_and_epilogue(tmp_path):
    torch.manual_seed(0)
    module = Odd()
    inputs = (torch.randn(13, 37),)
    rows = torch.export.Dim("rows", min=1, max=4096)
    ep, model = _compile(tmp_path, module, inputs, dynamic_shapes=({0: rows},))
    model = aotc.load_package(tmp_path / "m.pt2", num_threads=2)
    assert model.package_metadata["target"]["precision"] == "bf16"
    assert model.package_metadata["target"]["features"] == BF16_FEATURE
    assert BF16_FEATURE in model.package_metadata["target"]["cpu_features"].split()
    one = aotc.load_package(tmp_path / "m.pt2", num_threads=1)
    for m in (1, 5, 13, 25, 150, 301):  # one row, partial tiles, several MC blocks
        x = torch.randn(m, 37)
        _check(model, ep, module, (x,))
        # the threads split rows or columns, never K: every thread count sums alike
        torch.testing.assert_close(one(x), model(x), rtol=0, atol=0)


@needs_bf16
@pytest.mark.parametrize("batch", [1, 3])
def test_deep_k_over_several_slices_and_batches(tmp_path, batch):
    torch.manual_seed(1)
    module = NoBiasMatmul()  # K = 1031: two slices of 516 and 515 rows (the last one odd)
    inputs = (torch.randn(batch, 29, 1031),)
    ep, model = _compile(tmp_path, module, inputs)
    _check(model, ep, module, inputs)
    # two threads split the columns (29 rows are one block): the same sums as one thread
    one = aotc.load_package(tmp_path / "m.pt2", num_threads=1)
    two = aotc.load_package(tmp_path / "m.pt2", num_threads=2)
    torch.testing.assert_close(one(*inputs), two(*inputs), rtol=0, atol=0)


@needs_bf16
def test_swapped_weights_are_packed_as_bf16(tmp_path):
    torch.manual_seed(2)
    module = Odd(k=64, n=100)
    inputs = (torch.randn(20, 64),)
    ep, model = _compile(tmp_path, module, inputs)
    before = model(*inputs)
    model.load_constants(dict(module.state_dict()))  # packed at run time by the library
    torch.testing.assert_close(model(*inputs), before, rtol=0, atol=0)
    with torch.no_grad():
        module.fc.weight.mul_(-2.0)
    model.load_constants(dict(module.state_dict()))
    _check(model, ep, module, inputs)


def test_bf16_gemm_weights_only(tmp_path):
    """Only GEMM weights change precision: a convolution's packed weight stays float32."""
    conv = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3), torch.nn.Flatten(),
                               torch.nn.Linear(16 * 8, 10)).eval()
    with torch.no_grad():
        ep = torch.export.export(conv, (torch.randn(2, 8, 4, 6),))
    program = compile_program(ep, target_for("avx512"), build=False,
                              precision="bf16").program
    dtypes = {c.fqn: c.packing.dtype for c in program.constants if c.packing}
    assert dtypes == {"0.weight": "float32", "2.weight": "bfloat16"}
    gemms = [b.op.describe() for b in program.computed() if type(b.op).__name__ == "Gemm"]
    assert any("bf16 packed" in g for g in gemms)


@pytest.mark.parametrize("isa", ["avx2", "sse2"])
def test_targets_without_bf16_are_refused(tmp_path, isa):
    with torch.no_grad():
        ep = torch.export.export(Odd().eval(), (torch.randn(4, 37),))
    with pytest.raises(CompileError, match=f"{BF16_FEATURE}.*isa '{isa}'"):
        aotc.compile_and_package(ep, tmp_path / "m.pt2", options={"isa": isa, "precision": "bf16"})


def test_host_without_bf16_is_refused(tmp_path, monkeypatch):
    from aotc.scheduler import precision
    monkeypatch.setattr(host, "cpu_flags", lambda: frozenset({"avx512f", "avx2"}))
    with pytest.raises(CompileError, match=f"{BF16_FEATURE}.*this CPU"):
        precision.check_precision("bf16", target_for("avx512"), on_host=True)
    precision.check_precision("bf16", target_for("avx512"), on_host=False)


@pytest.mark.parametrize("value", ["fp16", "bfloat16", 16, None])
def test_bad_precision_values(value):
    from aotc.options import Options
    with pytest.raises(CompileError, match="precision must be one of"):
        Options.parse({"precision": value})


def test_loader_refuses_a_package_needing_a_missing_feature():
    meta = {"target": {"device": "cpu", "arch": "x86-64", "isa": "sse2", "precision": "bf16",
                       "features": "no_such_cpu_feature"}}
    with pytest.raises(PackageError, match="lacks.*no_such_cpu_feature.*precision"):
        _check_target("m.pt2", meta)


@needs_bf16
def test_max_autotune_keeps_the_isa_that_has_bf16(tmp_path):
    torch.manual_seed(3)
    module = Odd()
    inputs = (torch.randn(8, 37),)
    with torch.no_grad():
        ep = torch.export.export(module.eval(), inputs)
    model = aotc.load_package(aotc.compile_and_package(
        ep, tmp_path / "m.pt2", options={"precision": "bf16", "max_autotune": True}))
    assert model.package_metadata["target"]["precision"] == "bf16"
    assert {r["isa"] for r in model.package_metadata["autotune"]["measured"]} == {"host"}
    _check(model, ep, module, inputs)
