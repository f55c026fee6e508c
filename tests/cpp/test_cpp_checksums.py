"""The C++ runtime's load-time check: the chunked CRC-32s of a package whose weights span
several chunks (verified on threads) pass, and a damaged chunk is refused and named, as the
Python loader does."""
from __future__ import annotations

import numpy as np
import pytest
from cpp_builds import example_input
from test_cpp_runtime import run_model

import aotc
from aotc.package.format import ModelFiles, PackageReader, write_package


@pytest.fixture
def large_package(plain_example, tmp_path):
    """The example model with 10 MiB of unused bytes after its weights: three chunks."""
    reader = PackageReader(plain_example / "model.pt2")
    try:
        meta = reader.metadata("model")
        files = ModelFiles(meta, reader.library("model", meta), "",
                           bytes(reader.weights("model", meta)[0]) + bytes(10 << 20))
    finally:
        reader.close()
    return write_package(tmp_path / "large.pt2", {"model": files}), len(files.weights)


def test_weights_over_several_chunks_load_and_run(test_programs, large_package, tmp_path):
    path, _ = large_package
    x = example_input(3)
    proc, outputs = run_model(test_programs, path, "model", [x], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    np.testing.assert_allclose(outputs[0], aotc.load_package(path)(x), rtol=1e-6, atol=1e-6)


def test_a_damaged_chunk_is_refused_and_named(test_programs, large_package, tmp_path):
    path, size = large_package
    reader = PackageReader(path)
    offset = reader.weights("model", reader.metadata("model"))[1]
    reader.close()
    raw = bytearray(open(path, "rb").read())
    raw[offset + (9 << 20) + 5] ^= 0x10
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(bytes(raw))
    proc, _ = run_model(test_programs, bad, "model", [example_input(1)], tmp_path)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert (f"weights.bin of 'model' does not match its CRC-32 (bytes 8388608..{size} are "
            "damaged)") in proc.stdout
