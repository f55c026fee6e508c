"""The version rule (docs/ARCHITECTURE.md, "Versions") in the C++ runtime: a package of an
older or a newer format version, or whose library speaks an older or newer ABI version, is
refused (AOTC_ERR_PACKAGE) with the Python loader's advice to compile the model again."""
from __future__ import annotations

import re

import pytest
from cpp_builds import example_input
from other_versions import NEWER, OLDER, with_abi_version, with_format_version
from test_cpp_runtime import run_model

import aotc
from aotc.package.schema import FORMAT_VERSION
from aotc.runtime.abi import ABI_VERSION


def refused(programs, package, tmp_path, message: str) -> None:
    proc, _ = run_model(programs, package, "model", [example_input(2)], tmp_path)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert re.search(message, proc.stdout), proc.stdout
    with pytest.raises(aotc.PackageError, match=message):  # as the Python loader does
        aotc.load_package(package)


@pytest.mark.parametrize("version, advice", [(FORMAT_VERSION - 1, OLDER),
                                             (FORMAT_VERSION + 1, NEWER)])
def test_another_format_version_is_refused_with_advice(test_programs, plain_example, tmp_path,
                                                       version, advice):
    other = with_format_version(plain_example / "model.pt2", tmp_path / "other.pt2", version)
    refused(test_programs, other, tmp_path, f"has package format version {version}; this "
            rf"(runtime|aotc) reads version {FORMAT_VERSION} {advice}")


@pytest.mark.parametrize("version, advice", [(1, OLDER), (ABI_VERSION + 1, NEWER)])
def test_another_abi_version_is_refused_with_advice(test_programs, plain_example, tmp_path,
                                                    version, advice):
    other = with_abi_version(plain_example / "model.pt2", tmp_path / "other.pt2", version)
    refused(test_programs, other, tmp_path, f"model library ABI version {version}; this runtime "
            f"speaks {ABI_VERSION} {advice}")
