"""Kernel objects built at install (setup.py, aotc.cxx.prebuilt): built by the standard
library alone, linked by a first compile in place of building them, and never used where
they are not what this machine would build."""
from __future__ import annotations

import runpy
import subprocess
from pathlib import Path

import pytest
import torch

import aotc
from aotc.cxx import prebuilt
from aotc.cxx.compiler import build_kernels, kernel_jobs, kernel_sources
from aotc.target import host_target
from models import ReadmeModel

SETUP = runpy.run_path(str(Path(__file__).resolve().parents[2] / "setup.py"), run_name="setup")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The README model's kernels for this machine's level, built the way `pip install`
    builds them, in an interpreter without site-packages (no numpy, no torch)."""
    dest = tmp_path_factory.mktemp("prebuilt")
    cmd = SETUP["prebuild_command"](dest, "--isa", host_target().isa, "--kernel", "gemm",
                                     "--kernel", "checksum")
    proc = subprocess.run([cmd[0], "-S", *cmd[1:]], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return dest


def compile_readme(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(5, 10)
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (x,))
    return ep, x, aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")


def test_install_builds_each_kernel_under_its_cache_name(installed, tmp_path, monkeypatch):
    monkeypatch.setattr(prebuilt, "PREBUILT_DIR", tmp_path / "none")
    sources = [s for s in kernel_sources() if s.stem in ("gemm", "checksum")]
    monkeypatch.setenv("AOTC_CACHE_DIR", str(tmp_path / "cache"))
    # the names a cache build would give them, for the same target (nothing is built here)
    expected = {job.args[1].name for job in kernel_jobs(host_target(), sources)}
    assert {p.name for p in installed.glob("*.o")} == expected


def test_first_compile_links_the_installed_kernels(installed, tmp_path, monkeypatch):
    monkeypatch.setattr(prebuilt, "PREBUILT_DIR", installed)
    monkeypatch.setenv("AOTC_CACHE_DIR", str(tmp_path / "cache"))
    ep, x, path = compile_readme(tmp_path)
    assert not list((tmp_path / "cache" / "kernels").glob("*.o"))  # nothing compiled
    torch.testing.assert_close(aotc.load_package(path)(x), ep.module()(x))


def test_an_edited_kernel_misses_the_installed_object(installed, tmp_path, monkeypatch):
    # checksum.cpp with a line added: its key differs, so it builds into the cache, while
    # the unchanged source still comes from the install
    kernels = tmp_path / "kernels"
    src = next(s for s in kernel_sources() if s.stem == "checksum")
    kernels.mkdir()
    edited = kernels / "checksum.cpp"
    edited.write_text(src.read_text() + "\n// edited\n")
    monkeypatch.setattr(prebuilt, "PREBUILT_DIR", installed)
    monkeypatch.setenv("AOTC_CACHE_DIR", str(tmp_path / "cache"))
    (obj,) = build_kernels(host_target(), [edited])
    assert obj.parent == tmp_path / "cache" / "kernels" and obj.exists()
    (same,) = build_kernels(host_target(), [src])
    assert same.parent == installed
