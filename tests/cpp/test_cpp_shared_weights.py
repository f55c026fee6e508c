"""Tied weights in the C++ runtime: a package whose head shares the embedding's bytes runs
as in Python, and load_constants of one name of the tie swaps the tie, as in Python."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from raw_tensors import write_raw
from test_cpp_runtime import run_model

import aotc
from models import ConvBN, TiedLM


@pytest.fixture(scope="module")
def tied(tmp_path_factory):
    torch.manual_seed(0)
    m, x = TiedLM().eval(), torch.randint(0, 300, (2, 7))
    with torch.no_grad():
        ep = torch.export.export(m, (x,))
    path = tmp_path_factory.mktemp("tied") / "tied.pt2"
    return x, aotc.compile_and_package(ep, package_path=path, options={"freezing": False})


@pytest.mark.parametrize("name", [None, "embed.weight", "head.weight"])
def test_tied_weights_run_and_swap_as_in_python(test_programs, tied, tmp_path, name):
    x, path = tied
    model = aotc.load_package(path)
    flags = []
    if name is not None:
        value = np.random.default_rng(0).standard_normal((300, 48), dtype=np.float32)
        flags = ["--swap", name, write_raw(tmp_path / "value.raw", value)]
        model.load_constants({name: value}, check_full_update=False)
    proc, outputs = run_model(test_programs, path, "model", [x.numpy()], tmp_path, *flags)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    np.testing.assert_allclose(outputs[0], model(x.numpy()), rtol=1e-5, atol=1e-5)


def test_weights_folded_into_others_are_not_stored_and_run_as_in_python(test_programs, tmp_path):
    torch.manual_seed(2)
    m, x = ConvBN().eval(), torch.randn(2, 3, 9, 9)
    with torch.no_grad():
        ep = torch.export.export(m, (x,))
        path = aotc.compile_and_package(ep, package_path=tmp_path / "cb.pt2")
        want = m(x).numpy()
    proc, outputs = run_model(test_programs, path, "model", [x.numpy()], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "constant conv.weight" in proc.stdout  # the name stays
    np.testing.assert_allclose(outputs[0], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(outputs[0], aotc.load_package(path)(x.numpy()))
