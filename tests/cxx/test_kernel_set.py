"""A model links only the shipped kernels it needs: the table of each kernel source's names
against the symbols its object defines, and a cold build that compiles just those."""
from __future__ import annotations

import shutil
import subprocess

import pytest
import torch

import aotc
from aotc.cxx import prebuilt
from aotc.cxx.compiler import build_kernels, kernel_sources
from aotc.cxx.kernel_set import ALWAYS, EXPORTS, needed_sources
from aotc.target import host_target
from models import ReadmeModel


def defined_symbols(obj) -> set[str]:
    out = subprocess.run(["nm", "-g", "--defined-only", str(obj)], capture_output=True,
                         text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[-1].startswith("aotc_")}


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs binutils' nm")
def test_each_source_exports_exactly_its_table():
    sources = kernel_sources()
    assert {s.stem for s in sources} == set(EXPORTS) | ALWAYS
    for src, obj in zip(sources, build_kernels(host_target())):
        if src.stem in EXPORTS:
            c_names = {n for n in EXPORTS[src.stem] if not n.startswith("aotc::")}
            assert defined_symbols(obj) == c_names, src.name


def test_callees_come_with_their_callers():
    by_stem = {s.stem for s in needed_sources("aotc_sconv(&shape, x, w, b, y, ws);",
                                              kernel_sources())}
    assert by_stem == {"conv", "gemm", "checksum"}  # conv's im2col path runs aotc_sgemm
    assert {s.stem for s in needed_sources("aotc::scan_positions(0, 1, 4, 1, x, y);",
                                           kernel_sources())} == {"scan", "checksum"}
    # a name that merely shares a prefix pulls nothing in
    assert {s.stem for s in needed_sources("int aotc_sgemm_like = 0;",
                                           kernel_sources())} == {"checksum"}


def test_cold_build_compiles_only_the_kernels_the_model_uses(tmp_path, monkeypatch):
    monkeypatch.setenv("AOTC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(prebuilt, "PREBUILT_DIR", tmp_path / "no-install")  # as if none
    torch.manual_seed(0)
    model = ReadmeModel().eval()
    x = torch.randn(5, 10)
    with torch.no_grad():
        ep = torch.export.export(model, (x,))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    built = {p.name.split("-")[0] for p in (tmp_path / "cache" / "kernels").glob("*.o")}
    assert built == {"gemm", "checksum"}
    loaded = aotc.load_package(path)
    torch.testing.assert_close(loaded(x), ep.module()(x))
