"""The load-time integrity check: chunked CRC-32s, their parallel verification, the
refusal of a damaged chunk (named by its bytes), and the full sha256 check kept beside it."""
from __future__ import annotations

import json
import zipfile
import zlib

import numpy as np
import pytest
import torch

import aotc
from aotc.cli import main
from aotc.package.checksum import chunk_count, chunk_crcs, first_bad_chunk
from aotc.package.format import ModelFiles, PackageReader, write_package
from models import ReadmeModel


def test_chunk_crcs_are_zlibs_crc32_of_each_chunk():
    data = np.random.default_rng(0).integers(0, 256, 1000, dtype=np.uint8).tobytes()
    assert chunk_crcs(data, 256) == "".join(f"{zlib.crc32(data[k:k + 256]):08x}"
                                            for k in range(0, 1000, 256))
    assert chunk_count(1000, 256) == 4 and chunk_count(1024, 256) == 4
    assert chunk_crcs(b"", 256) == "00000000" and chunk_count(0, 256) == 1


@pytest.mark.parametrize("size, chunk", [(1000, 256), (20 << 20, 1 << 20)])  # one and 4 threads
def test_the_first_damaged_chunk_is_found(size, chunk):
    data = bytearray(np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8).tobytes())
    sums = chunk_crcs(data, chunk)
    assert first_bad_chunk(data, sums, chunk) is None
    last = chunk_count(size, chunk) - 1
    data[last * chunk] ^= 0x40
    data[2 * chunk + 17] ^= 0x01
    assert first_bad_chunk(data, sums, chunk) == 2
    data[2 * chunk + 17] ^= 0x01
    assert first_bad_chunk(data, sums, chunk) == last


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    torch.manual_seed(0)
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(2, 10),))
    path = tmp_path_factory.mktemp("pkg") / "model.pt2"
    aotc.compile_and_package(ep, package_path=path)
    return ep, path


@pytest.fixture(scope="module")
def package(built):
    return built[1]


def _files(path) -> ModelFiles:
    reader = PackageReader(path)
    try:
        meta = reader.metadata("model")
        return ModelFiles(meta, reader.library("model", meta), "", bytes(reader.weights("model",
                                                                                        meta)[0]))
    finally:
        reader.close()


def test_a_damaged_chunk_of_large_weights_is_named(package, tmp_path):
    files = _files(package)
    big = files.weights + bytes(10 << 20)  # three chunks of 4 MiB: verified on threads
    path = write_package(tmp_path / "big.pt2", {"model": ModelFiles(files.metadata, files.library,
                                                                     "", big)})
    reader = PackageReader(path)
    meta = reader.metadata("model")
    data, offset = reader.weights("model", meta)
    assert len(data) == len(big) and offset % 64 == 0 and len(meta["crc32"]["weights.bin"]) == 24
    reader.close()
    raw = bytearray(open(path, "rb").read())
    raw[offset + (9 << 20)] ^= 0x80
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(bytes(raw))
    with pytest.raises(aotc.PackageError, match=r"weights.bin of 'model' does not match its "
                       rf"CRC-32 \(bytes 8388608\.\.{len(big)} are damaged\)"):
        aotc.load_package(bad)


def _edit(src, dst, entry, mutate):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            zout.writestr(info, mutate(data) if info.filename == entry else data)


def test_crc_fields_are_checked_against_the_entries(package, tmp_path):
    def set_field(path, key, value):
        def mutate(d):
            meta = json.loads(d)
            meta["crc32"][key] = value
            return json.dumps(meta).encode()
        bad = tmp_path / f"{key}.pt2"
        _edit(package, bad, "aotc/model/metadata.json", mutate)
        return bad

    with pytest.raises(aotc.PackageError, match="'crc32.weights.bin' holds 2 checksums"):
        aotc.load_package(set_field(package, "weights.bin", "00000000" * 2))
    with pytest.raises(aotc.PackageError, match="crc32.model.so"):
        aotc.load_package(set_field(package, "model.so", "0000000g"))
    with pytest.raises(aotc.PackageError, match="crc32.chunk_bytes"):
        aotc.load_package(set_field(package, "chunk_bytes", 1))


def test_inspect_verify_checks_the_sha256_digests(package, tmp_path, capsys):
    assert main(["inspect", "--verify", str(package)]) == 0
    assert "match their sha256 digests" in capsys.readouterr().out

    def wrong_digest(d):
        meta = json.loads(d)
        meta["sha256"]["weights.bin"] = "0" * 64
        return json.dumps(meta).encode()

    edited = tmp_path / "edited.pt2"
    _edit(package, edited, "aotc/model/metadata.json", wrong_digest)
    aotc.load_package(edited)  # loading checks the CRC-32s, which still hold
    assert main(["inspect", "--verify", str(edited)]) == 1
    assert "weights.bin of 'model' does not match its sha256" in capsys.readouterr().err


def test_weights_are_used_in_place_read_only(package):
    import mmap

    model = aotc.load_package(package)
    weights = model._weights
    assert not weights.flags.owndata and not weights.flags.writeable
    base = weights
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)


def test_unaligned_weights_from_another_zip_writer_load_by_copy(built, tmp_path):
    """A package rewritten by a plain zip writer: weights.bin stored but not 64-byte aligned."""
    ep, package = built
    with zipfile.ZipFile(package) as zin:
        entries = [(i.filename, zin.read(i)) for i in zin.infolist()]
    for pad in range(64):
        plain = tmp_path / "plain.pt2"
        with zipfile.ZipFile(plain, "w") as zout:
            zout.writestr("x" * (pad + 1), b"")  # shifts the entries after it
            for name, data in entries:
                zout.writestr(name, data)  # ZIP_STORED, no alignment padding
        reader = PackageReader(plain)
        offset = reader.weights("model", reader.metadata("model"))[1]
        reader.close()
        if offset % 64:
            break
    assert offset % 64
    model = aotc.load_package(plain)
    assert model._weights.ctypes.data % 64 == 0  # the one aligned copy
    x = torch.randn(2, 10)
    torch.testing.assert_close(model(x), ep.module()(x))
