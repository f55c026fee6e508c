"""AOTI_RUNTIME_CHECK_INPUTS=1 (or AOTC_RUNTIME_CHECK_INPUTS=1): a stride that differs from
the export raises; without it a non-contiguous input is copied and runs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import aotc
from models import ReadmeModel


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    m = ReadmeModel().eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    with torch.no_grad():
        ep = torch.export.export(m, (torch.randn(8, 10),), dynamic_shapes={"x": {0: batch}})
    return m, aotc.compile_and_package(ep, tmp_path_factory.mktemp("chk") / "m.pt2")


@pytest.mark.parametrize("var", ["AOTI_RUNTIME_CHECK_INPUTS", "AOTC_RUNTIME_CHECK_INPUTS"])
def test_stride_check_on(package, monkeypatch, var):
    m, path = package
    monkeypatch.setenv(var, "1")
    model = aotc.load_package(path)
    x = torch.randn(10, 6).t()  # (6, 10) with strides (1, 6)
    with pytest.raises(RuntimeError, match=r"input 'x': stride 1 in dim 0 differs from the "
                                           r"exported layout's 10 \(strides \[1, 6\], expected "
                                           r"\[10, 1\] for sizes \[6, 10\]"):
        model(x)
    with pytest.raises(aotc.InputError, match=r"input 'x': stride 20 in dim 0 .*strides \[20, 2\]"):
        model(np.zeros((6, 20), np.float32)[:, ::2])
    good = x.contiguous()
    with torch.no_grad():  # contiguous inputs of any batch size pass, the range still holds
        torch.testing.assert_close(model(good), m(good))
        torch.testing.assert_close(model(good[:1]), m(good[:1]))
    with pytest.raises(aotc.InputError, match=r"\[0, 64\]"):  # min 1: unchecked
        model(torch.randn(65, 10))


def test_stride_check_off_copies(package, monkeypatch):
    m, path = package
    monkeypatch.delenv("AOTI_RUNTIME_CHECK_INPUTS", raising=False)
    monkeypatch.setenv("AOTC_RUNTIME_CHECK_INPUTS", "0")
    model = aotc.load_package(path)
    x = torch.randn(10, 6).t()
    with torch.no_grad():
        torch.testing.assert_close(model(x), m(x))
    a = np.random.default_rng(0).standard_normal((6, 20), dtype=np.float32)[:, ::2]
    with torch.no_grad():
        torch.testing.assert_close(torch.from_numpy(model(a)), m(torch.from_numpy(a.copy())))
    with pytest.raises(aotc.InputError, match="dtype"):  # dtype and rank are always checked
        model(torch.randn(6, 10, dtype=torch.float64))
