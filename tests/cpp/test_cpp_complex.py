"""complex64 and complex128 through the C++ runtime: a model with complex inputs, a complex
constant and complex outputs, run by tests/cpp/run_model.cpp and compared with eager."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from test_cpp_runtime import run_model

import aotc


class Rotate(torch.nn.Module):
    """Complex in, complex and real out, with a registered complex buffer."""

    def __init__(self, dtype: torch.dtype):
        super().__init__()
        real = torch.float32 if dtype == torch.complex64 else torch.float64
        self.register_buffer("phase", torch.polar(torch.ones(5, dtype=real),
                                                  torch.linspace(0, 3, 5, dtype=real)))

    def forward(self, z, w):
        y = z * self.phase + w.conj()
        return y, y.abs().sum(-1), torch.view_as_real(y.exp())


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_model_from_cpp(test_programs, tmp_path, dtype):
    torch.manual_seed(0)
    z, w = torch.randn(3, 5, dtype=dtype), torch.randn(3, 5, dtype=dtype)
    module = Rotate(dtype).eval()
    batch = torch.export.Dim("batch", min=1, max=16)
    ep = torch.export.export(module, (z, w), dynamic_shapes=({0: batch}, {0: batch}))
    package = aotc.compile_and_package(ep, package_path=tmp_path / "rotate.pt2")
    name = str(dtype).replace("torch.", "")
    for b in (3, 7):
        z, w = torch.randn(b, 5, dtype=dtype), torch.randn(b, 5, dtype=dtype)
        proc, outs = run_model(test_programs, package, "model", [z.numpy(), w.numpy()], tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"input z {name} [" in proc.stdout and f"input w {name} [" in proc.stdout, proc.stdout
        outputs = [ln for ln in proc.stdout.splitlines() if ln.startswith("output ")]
        assert [f" {name} [" in ln for ln in outputs] == [True, False, False], proc.stdout
        want = [t.numpy() for t in module(z, w)]
        assert [o.dtype for o in outs] == [a.dtype for a in want]
        for got, expected in zip(outs, want):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
