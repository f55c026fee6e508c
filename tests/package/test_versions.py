"""The version rule (docs/ARCHITECTURE.md, "Versions"): the Python loader refuses a package of
an older or a newer format version, or whose library speaks an older or newer ABI version,
with a PackageError that says to compile the model again with this aotc."""
from __future__ import annotations

import pytest
import torch
from other_versions import NEWER, OLDER, with_abi_version, with_format_version

import aotc
from aotc.package.schema import FORMAT_VERSION
from aotc.runtime.abi import ABI_VERSION
from models import ReadmeModel


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(2, 10),))
    return aotc.compile_and_package(ep, package_path=tmp_path_factory.mktemp("v") / "model.pt2")


@pytest.mark.parametrize("version, advice", [(FORMAT_VERSION - 1, OLDER),
                                             (FORMAT_VERSION + 1, NEWER)])
def test_another_format_version_is_refused_with_advice(package, tmp_path, version, advice):
    other = with_format_version(package, tmp_path / "other.pt2", version)
    with pytest.raises(aotc.PackageError, match=f"has package format version {version}; this "
                       f"aotc reads version {FORMAT_VERSION} {advice}"):
        aotc.load_package(other)


@pytest.mark.parametrize("version, advice", [(ABI_VERSION - 1, OLDER), (ABI_VERSION + 1, NEWER)])
def test_another_abi_version_is_refused_with_advice(package, tmp_path, version, advice):
    other = with_abi_version(package, tmp_path / "other.pt2", version)
    with pytest.raises(aotc.PackageError, match=f"model library ABI version {version}; this "
                       f"runtime speaks {ABI_VERSION} {advice}"):
        aotc.load_package(other)


def test_this_version_loads(package):
    assert aotc.load_package(package)(torch.ones(2, 10)).shape == (2, 1)
