"""A 3x3 convolution's weight stored as its Winograd transform (layout conv_winograd_f2x3):
its record in the package must describe the whole weight it was packed from and the panels
it was packed in, or loading refuses the package."""
from __future__ import annotations

import json
import zipfile

import pytest
import torch

import aotc
from damage import apply


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(32, 40, 3, padding=1), torch.nn.ReLU())
    with torch.no_grad():
        ep = torch.export.export(model.eval(), (torch.randn(1, 32, 12, 12),))
    path = aotc.compile_and_package(ep, package_path=tmp_path_factory.mktemp("wino") / "m.pt2")
    with zipfile.ZipFile(path) as z:
        meta = next(n for n in z.namelist() if n.endswith("metadata.json"))
        constants = json.loads(z.read(meta))["constants"]
    index = [c["name"] for c in constants].index("0.weight")
    assert constants[index]["packing"]["layout"] == "conv_winograd_f2x3"
    return path, index


def test_the_package_loads_and_runs(package):
    path, _ = package
    x = torch.randn(1, 32, 12, 12)
    assert aotc.load_package(path)(x).shape == (1, 40, 12, 12)


@pytest.mark.parametrize("field, value, message", [
    ("cout", 39, r"packing.*cout \* cin \* 9 the constant's 11520 values"),
    ("cin", 0, r"packing.cin.*a positive number"),
    ("nr", 8, r"nbytes"),  # another panel width: another size than the bytes stored
    ("layout", "int4_nibbles", r"expected a constant of dtype int8"),  # not that layout
])
def test_winograd_layout_is_checked(package, tmp_path, field, value, message):
    path, index = package
    bad = tmp_path / "bad.pt2"
    apply(path, bad, [("field", ("constants", index, "packing", field), value)])
    with pytest.raises(aotc.PackageError, match=message):
        aotc.load_package(bad)
