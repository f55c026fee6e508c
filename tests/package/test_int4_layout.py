"""An int4 weight stored two values a byte (layout int4_nibbles): its record in the package
must describe the whole weight it was packed from, or loading refuses the package."""
from __future__ import annotations

import json
import warnings
import zipfile

import pytest
import torch

import aotc
from damage import apply

pytest.importorskip("torchao")


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    from torchao.quantization import IntxWeightOnlyConfig, quantize_
    from torchao.quantization.granularity import PerGroup

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.ReLU(), torch.nn.Linear(96, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_(model.eval(), IntxWeightOnlyConfig(weight_dtype=torch.int4,
                                                     granularity=PerGroup(32)))
    with torch.no_grad():
        ep = torch.export.export(model, (torch.randn(2, 64),))
    path = aotc.compile_and_package(ep, package_path=tmp_path_factory.mktemp("int4") / "m.pt2")
    with zipfile.ZipFile(path) as z:
        meta = next(n for n in z.namelist() if n.endswith("metadata.json"))
        constants = json.loads(z.read(meta))["constants"]
    index = [c["name"] for c in constants].index("2.weight.qdata")
    assert constants[index]["packing"]["layout"] == "int4_nibbles"
    return path, index


@pytest.mark.parametrize("field, value, message", [
    ("k", 48, r"packing.*k a multiple of 32 and k \* n the constant's 768 values"),
    ("n", 7, r"packing.*k a multiple of 32 and k \* n the constant's 768 values"),
    ("layout", "int8_dot_groups", r"packing.offset. is .missing."),  # not that layout's record
])
def test_int4_layout_is_checked(package, tmp_path, field, value, message):
    path, index = package
    bad = tmp_path / "bad.pt2"
    apply(path, bad, [("field", ("constants", index, "packing", field), value)])
    with pytest.raises(aotc.PackageError, match=message):
        aotc.load_package(bad)
