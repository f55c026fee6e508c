"""zip64 archives in the C++ runtime, as every package over 4 GB is: a package whose local
headers and directory are all zip64 loads (from a file and from a buffer) and runs as in
Python, and a damaged zip64 end record is refused by name."""
from __future__ import annotations

import numpy as np
import pytest
from cpp_builds import example_input
from test_cpp_runtime import run_model
from zip64 import rewritten, with_zip64_directory

import aotc


@pytest.fixture
def all64(plain_example, tmp_path):
    local = rewritten(plain_example / "model.pt2", tmp_path / "local64.pt2")
    return with_zip64_directory(local, tmp_path / "all64.pt2")


@pytest.mark.parametrize("flags", [(), ("--buffer",)])
def test_an_all_zip64_package_runs_as_in_python(test_programs, all64, tmp_path, flags):
    x = example_input(3)
    proc, outputs = run_model(test_programs, all64, "model", [x], tmp_path, *flags)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    np.testing.assert_allclose(outputs[0], aotc.load_package(all64)(x), rtol=1e-6, atol=1e-6)


def test_a_misplaced_zip64_end_record_is_refused(test_programs, all64, tmp_path):
    raw = bytearray(all64.read_bytes())
    locator = raw.rindex(b"PK\x06\x07")
    raw[locator + 8:locator + 16] = (len(raw) - 30).to_bytes(8, "little")  # points past itself
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(bytes(raw))
    proc, _ = run_model(test_programs, bad, "model", [example_input(1)], tmp_path)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "zip64 end record is missing or misplaced" in proc.stdout
