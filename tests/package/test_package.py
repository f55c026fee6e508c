"""The .pt2 format: layout, alignment, round trip, and every way a package can be bad."""
from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
import torch

import aotc
from aotc.ir.nodes import PackedGemmB
from aotc.package.format import PackageReader
from aotc.scheduler.prepack import pack_panels
from models import ReadmeModel


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    torch.manual_seed(0)
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(2, 10),))
    path = tmp_path_factory.mktemp("pkg") / "model.pt2"
    aotc.compile_and_package(ep, package_path=path)
    return ep, path


def test_layout_and_metadata(package):
    ep, path = package
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        assert {"archive_format", "aotc/version", "aotc/model/metadata.json", "aotc/model/model.so",
                "aotc/model/model.cpp", "aotc/model/weights.bin"} <= names
        assert zf.read("archive_format") == b"pt2"
        assert zf.getinfo("aotc/model/weights.bin").compress_type == zipfile.ZIP_STORED
        meta = json.loads(zf.read("aotc/model/metadata.json"))
    assert meta["inputs"] == [{"name": "x", "kind": "tensor", "dtype": "float32", "sizes": [2, 10],
                              "strides": [10, 1]}]
    assert [c["name"] for c in meta["constants"]] == ["fc1.weight", "fc1.bias", "fc2.weight",
                                                      "fc2.bias"]
    assert all(c["offset"] % 64 == 0 for c in meta["constants"])
    assert meta["target"]["device"] == "cpu" and meta["torch_version"] == torch.__version__
    assert set(meta["sha256"]) == {"model.so", "weights.bin"}
    assert set(meta["crc32"]) == {"chunk_bytes", "model.so", "weights.bin"}


def test_weights_are_mapped_aligned_and_equal_the_state_dict(package):
    ep, path = package
    reader = PackageReader(path)
    meta = reader.metadata("model")
    data, offset = reader.weights("model", meta)
    assert offset % 64 == 0
    raw = np.frombuffer(data, np.uint8)
    for c in meta["constants"]:
        value = np.frombuffer(raw[c["offset"]:c["offset"] + c["nbytes"]], np.float32)
        expected = ep.state_dict[c["name"]].detach().numpy()
        if "packing" in c:  # a GEMM weight, stored in the kernel's panel layout
            packing = PackedGemmB(**{k: v for k, v in c["packing"].items() if k != "layout"})
            expected = pack_panels(expected, packing)
        np.testing.assert_array_equal(value.reshape(expected.shape), expected)
    reader.close()


def _rewrite(src, dst, entry, mutate):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == entry:
                data = mutate(data)
                if data is None:
                    continue
            zout.writestr(info, data)


@pytest.mark.parametrize("entry, mutate, message", [
    ("aotc/model/model.so", lambda d: d[:100] + bytes([d[100] ^ 0xFF]) + d[101:], "CRC-32"),
    ("aotc/model/weights.bin", lambda d: bytes([d[0] ^ 0x01]) + d[1:], "CRC-32"),
    ("aotc/model/metadata.json", lambda d: d[:-5], "not valid JSON"),
    ("aotc/model/model.so", lambda d: None, "missing aotc/model/model.so"),
    ("aotc/version", lambda d: b"99", "format version 99"),
])
def test_corrupt_packages_raise_package_error(package, tmp_path, entry, mutate, message):
    _, path = package
    bad = tmp_path / "bad.pt2"
    _rewrite(path, bad, entry, mutate)
    with pytest.raises(aotc.PackageError, match=message):
        aotc.load_package(bad)


def test_not_a_package(tmp_path):
    junk = tmp_path / "junk.pt2"
    junk.write_bytes(b"definitely not a zip")
    with pytest.raises(aotc.PackageError, match="not a valid .pt2"):
        aotc.load_package(junk)
    with pytest.raises(aotc.PackageError, match="does not exist"):
        aotc.load_package(tmp_path / "missing.pt2")
    other = tmp_path / "other.pt2"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("archive_format", "pt2")
    with pytest.raises(aotc.PackageError, match="not an aotc package"):
        aotc.load_package(other)


def test_truncated_package(package, tmp_path):
    _, path = package
    data = path.read_bytes()
    cut = tmp_path / "cut.pt2"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(aotc.PackageError):
        aotc.load_package(cut)


def test_refuses_to_overwrite_a_file_that_is_not_a_package(package, tmp_path):
    ep, _ = package
    precious = tmp_path / "notes.pt2"
    precious.write_text("my notes")
    with pytest.raises(aotc.PackageError, match="refusing to overwrite"):
        aotc.compile_and_package(ep, package_path=precious)
    assert precious.read_text() == "my notes"
    with pytest.raises(aotc.CompileError, match="must end in .pt2"):
        aotc.compile_and_package(ep, package_path=tmp_path / "model.so")


def test_default_package_path_is_a_temp_file(package):
    ep, _ = package
    path = aotc.compile_and_package(ep)
    assert path.endswith(".pt2")
    model = aotc.load_package(path)
    x = torch.randn(2, 10)
    torch.testing.assert_close(model(x), ep.module()(x))


@pytest.mark.parametrize("field, value, message", [
    ("offset", 10 ** 6, r"constants\[0\].packing.*reading inside the constant's 160 values"),
    ("sb_k", -1, r"constants\[0\].packing.*reading inside"),
    ("nr", 48, r"constants\[0\].nbytes"),  # no build's panel width (AVX-512 32, others 16)
    ("layout", "other", r"constants\[0\].packing.layout"),
    # the int8 kernel's layout holds int8 constants only
    ("layout", "int8_dot_groups16", r"constants\[0\].packing.*expected a constant of dtype int8"),
])
def test_packed_layouts_are_checked(package, tmp_path, field, value, message):
    """A packed weight's record must describe bytes inside the value it was packed from."""
    from damage import apply

    _, path = package
    bad = tmp_path / "bad.pt2"
    apply(path, bad, [("field", ("constants", 0, "packing", field), value)])
    with pytest.raises(aotc.PackageError, match=message):
        aotc.load_package(bad)


class _IntWeighted(torch.nn.Module):
    """_int_mm by a constant int8 weight: stored packed (int8_dot_groups16)."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.register_buffer("w", torch.randint(-128, 128, (45, 70), dtype=torch.int8,
                                                generator=g))

    def forward(self, a):
        return torch._int_mm(a, self.w.t())


@pytest.mark.parametrize("row_taps, message", [
    (3, r"row_taps.*a divisor of k \(70\)"),  # 70 rows are no whole kernel rows of 3
    (2, r"constants\[\d+\].nbytes"),  # rows of 2 padded to 4: 140 rows, more bytes
])
def test_a_bad_row_padding_record_is_refused(tmp_path, row_taps, message):
    """A packed int8 weight's record of kernel rows padded to whole groups must divide k and
    match the bytes stored: else the package is refused, naming the field."""
    from damage import apply

    a = torch.randint(0, 256, (9, 70), dtype=torch.uint8)
    with torch.no_grad():
        ep = torch.export.export(_IntWeighted().eval(), (a,))
    good = aotc.compile_and_package(ep, package_path=tmp_path / "good.pt2",
                                    options={"freezing": False})
    with zipfile.ZipFile(good) as z:
        meta = json.loads(z.read(next(n for n in z.namelist() if n.endswith("metadata.json"))))
    (k,) = [i for i, c in enumerate(meta["constants"]) if c["name"] == "w"]
    assert meta["constants"][k]["packing"]["row_taps"] == 0
    bad = tmp_path / "bad.pt2"
    apply(good, bad, [("field", ("constants", k, "packing", "row_taps"), row_taps)])
    with pytest.raises(aotc.PackageError, match=message):
        aotc.load_package(bad)
