"""zip64 archives, as every package over 4 GB is: the writer keeps weights.bin and model.so
64-byte aligned when their local headers carry zip64 sizes, and the Python loader maps them
from an archive whose directory is all zip64 (the C++ loader: tests/cpp/test_cpp_zip64.py)."""
from __future__ import annotations

import mmap
import struct
import zipfile

import numpy as np
import pytest
import torch
from zip64 import rewritten, with_zip64_directory

import aotc
from aotc.package.format import PackageReader
from models import ReadmeModel


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    torch.manual_seed(0)
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(2, 10),))
    folder = tmp_path_factory.mktemp("zip64")
    plain = aotc.compile_and_package(ep, package_path=folder / "model.pt2")
    local = rewritten(plain, folder / "local64.pt2")
    return ep, local, with_zip64_directory(local, folder / "all64.pt2")


def _local_extra(path, name) -> bytes:
    with zipfile.ZipFile(path) as zf:
        offset = zf.getinfo(name).header_offset
    data = path.read_bytes()
    n, e = struct.unpack_from("<HH", data, offset + 26)
    return data[offset + 30 + n:offset + 30 + n + e]


def test_zip64_local_headers_keep_the_entries_aligned(built):
    _, local, _ = built
    for entry in ("aotc/model/weights.bin", "aotc/model/model.so"):
        extra = _local_extra(local, entry)
        ids = []
        while extra:
            tag, size = struct.unpack_from("<HH", extra)
            ids.append(tag)
            extra = extra[4 + size:]
        assert 0x0001 in ids, f"{entry} has no zip64 field"
    reader = PackageReader(local)
    assert reader.weights("model", reader.metadata("model"))[1] % 64 == 0
    reader.close()


def test_an_all_zip64_archive_loads_mapped(built):
    ep, _, all64 = built
    with zipfile.ZipFile(all64) as zf:
        assert zf.testzip() is None
    data = all64.read_bytes()
    assert b"PK\x06\x06" in data[-200:] and b"PK\x06\x07" in data[-200:]
    model = aotc.load_package(all64)
    x = torch.randn(2, 10)
    torch.testing.assert_close(model(x), ep.module()(x))
    base = model._weights
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)
