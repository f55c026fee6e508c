"""A package for another processor family, refused by name by the C++ runtime as by the
Python loader: one compiled with options={"target": "aarch64"} (its model.so is an aarch64
library), and packages whose metadata alone says aarch64 (an older one without the
architecture field, a native build of an aarch64 machine)."""
from __future__ import annotations

import platform
import re
import shutil

import pytest
import torch
from cpp_builds import example_input
from test_cpp_runtime import run_model

import aotc
from aotc.package.format import ModelFiles, PackageReader, write_package
from aotc.target import target_for

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64",
                                reason="the refusals of an x86-64 runtime")
CROSS = target_for("neon").compiler
REFUSED = (r"was compiled for aarch64 \({arch}, isa '{isa}'\): it runs on an aarch64 machine, "
           r"and this is x86_64")


def refused_by_both(programs, package, tmp_path, message: str) -> None:
    proc, _ = run_model(programs, package, "model", [example_input(2)], tmp_path)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert re.search(message, proc.stdout), proc.stdout
    with pytest.raises(aotc.PackageError, match=message):
        aotc.load_package(package)


def with_target(package, out, **target) -> str:
    """`package` with its target replaced: the fields given, the others dropped."""
    reader = PackageReader(package)
    meta = reader.metadata("model")
    weights = bytes(reader.weights("model", meta)[0])
    library = reader.library("model", meta)
    reader.close()
    meta["target"] = {"device": "cpu", **target}
    return write_package(out, {"model": ModelFiles(meta, library, "", weights)})


@pytest.mark.skipif(shutil.which(CROSS) is None, reason=f"{CROSS} is not installed "
                    "(apt-get install g++-aarch64-linux-gnu)")
def test_a_package_compiled_for_aarch64_is_refused(test_programs, tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(10, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    ep = torch.export.export(model, (torch.randn(2, 10),))
    package = aotc.compile_and_package(ep, tmp_path / "a64.pt2", options={"target": "aarch64"})
    reader = PackageReader(package)
    meta = reader.metadata("model")
    assert meta["target"] == {"device": "cpu", "arch": "armv8-a", "isa": "neon",
                              "architecture": "aarch64", "cpu_features": "asimd fp"}
    assert reader.library("model", meta)[18:20] == (183).to_bytes(2, "little")  # EM_AARCH64
    reader.close()
    refused_by_both(test_programs, package, tmp_path, REFUSED.format(arch="armv8-a", isa="neon"))


@pytest.mark.parametrize("target", [{"arch": "armv8.2-a+fp16+dotprod", "isa": "neon-dotprod"},
                                    {"arch": "native", "isa": "native",
                                     "architecture": "aarch64"}],
                         ids=["arch-alone", "native"])
def test_metadata_naming_aarch64_is_refused(test_programs, plain_example, tmp_path, target):
    package = with_target(plain_example / "model.pt2", tmp_path / "a64.pt2", **target)
    refused_by_both(test_programs, package, tmp_path,
                    REFUSED.format(arch=target["arch"].replace("+", r"\+"), isa=target["isa"]))
