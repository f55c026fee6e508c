"""The model library describes itself (ABI version 2) and agrees with metadata.json."""
from __future__ import annotations

import zipfile

import torch

import aotc
from aotc.package.format import ALIGN
from models import ReadmeModel


class TwoInputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(6, 4))

    def forward(self, x, idx):
        y = x @ self.w
        return y.relu(), (y * 2.0).sum(dim=1), idx + 1


def test_description_matches_metadata(tmp_path):
    batch = torch.export.Dim("batch", min=1, max=1024)
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(8, 10),),
                                 dynamic_shapes={"x": {0: batch}})
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2"))
    d, meta = model.description, model.package_metadata
    assert d.inputs == [{k: i[k] for k in ("name", "dtype", "sizes")} for i in meta["inputs"]]
    assert d.outputs == meta["outputs"] and d.symbols == meta["symbols"]
    # the library describes each constant as stored; how a packed one is laid out is the
    # package's record (its bytes are written by the library's aotc_pack_constant)
    assert d.constants == [{k: v for k, v in c.items() if k != "packing"}
                           for c in meta["constants"]]
    # fc2 has one output column: too narrow to pack
    assert [c["name"] for c in meta["constants"] if "packing" in c] == ["fc1.weight"]
    sym = next(iter(d.symbols))
    assert d.inputs[0]["sizes"] == [sym, 10] and d.symbols[sym] == [0, 1024]  # min 1: unchecked
    assert d.metadata["model_name"] == "model" and d.metadata["device"] == "cpu"
    assert d.metadata["arch"] == meta["target"]["arch"]
    assert d.metadata["torch_version"] == torch.__version__


def test_two_inputs_and_model_so_stored_aligned(tmp_path):
    torch.manual_seed(0)
    x, idx = torch.randn(3, 6), torch.arange(5)
    with torch.no_grad():
        ep = torch.export.export(TwoInputs().eval(), (x, idx))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "two.pt2")
    model = aotc.load_package(path)
    d = model.description
    assert [(i["name"], i["dtype"], i["sizes"]) for i in d.inputs] == [
        ("x", "float32", [3, 6]), ("idx", "int64", [5])]
    assert [(o["dtype"], o["sizes"]) for o in d.outputs] == [
        ("float32", [3, 4]), ("float32", [3]), ("int64", [5])]
    assert [c["name"] for c in d.constants] == ["w"] and d.symbols == {}
    for got, want in zip(model(x, idx), ep.module()(x, idx)):
        torch.testing.assert_close(got, want)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("aotc/model/model.so")
        assert info.compress_type == zipfile.ZIP_STORED
        with open(path, "rb") as f:
            f.seek(info.header_offset + 26)
            n, e = int.from_bytes(f.read(2), "little"), int.from_bytes(f.read(2), "little")
        assert (info.header_offset + 30 + n + e) % ALIGN == 0
