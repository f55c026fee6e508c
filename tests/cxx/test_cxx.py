"""The native build: cache reuse, compiler failures, ISA options."""
from __future__ import annotations

import pytest
import torch

import aotc
from aotc.cxx.compiler import build_model
from aotc.passes.pipeline import compile_program
from aotc.target import host_target, target_for
from aotc.target.host import missing_features
from builds_at_once import libraries_built_at_once
from models import ReadmeModel


@pytest.fixture(scope="module")
def exported():
    torch.manual_seed(0)
    with torch.no_grad():
        return torch.export.export(ReadmeModel().eval(), (torch.randn(3, 10),))


def test_same_program_twice_reuses_the_library(exported):
    first = compile_program(exported, host_target())
    second = compile_program(exported, host_target())
    assert second.cached
    assert first.library == second.library
    assert second.source == first.source  # codegen is deterministic


def test_concurrent_builds_of_one_model_each_get_the_whole_library(exported):
    """Builds of the same model at once (processes sharing the cache) each rewrite its
    source: a compiler must never read it half written, or its library lacks the model."""
    import uuid

    source = compile_program(exported, host_target(), build=False).source
    libraries = []
    for _ in range(3):  # a new source each round: a model nobody has built yet
        libraries += libraries_built_at_once([source + f"// {uuid.uuid4()}\n"] * 4)
    assert len(libraries) == 12
    assert all(b"aotc_abi_version" in lib for lib in libraries)


def test_compiler_failure_points_at_the_log():
    with pytest.raises(aotc.BuildError, match="compiling the generated model failed") as info:
        build_model("this is not C++;\n", host_target())
    log = info.value.log_path
    assert log and "error" in open(log).read()
    assert log in str(info.value)


def test_missing_compiler_is_a_clear_error(exported, tmp_path, monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler-xyz")
    with pytest.raises(aotc.BuildError, match="'no-such-compiler-xyz' was not found"):
        aotc.compile_and_package(exported, package_path=tmp_path / "m.pt2")
    assert not (tmp_path / "m.pt2").exists()


def test_portable_isa_option_runs_here(exported, tmp_path):
    path = aotc.compile_and_package(exported, package_path=tmp_path / "sse2.pt2",
                                    options={"isa": "sse2"})
    model = aotc.load_package(path)
    assert model.package_metadata["target"]["arch"] == "x86-64"
    x = torch.randn(3, 10)
    torch.testing.assert_close(model(x), exported.module()(x))


def test_isa_feature_table():
    assert missing_features(target_for("sse2")) == set()
    assert missing_features(host_target()) == set()


def test_unknown_options_are_rejected(exported, tmp_path):
    with pytest.raises(aotc.CompileError, match=r"unknown option\(s\) 'max_autotune_gemm' \("):
        aotc.compile_and_package(exported, package_path=tmp_path / "m.pt2",
                                 options={"max_autotune_gemm": True})
    with pytest.raises(aotc.CompileError, match="num_threads"):
        aotc.compile_and_package(exported, package_path=tmp_path / "m.pt2",
                                 options={"num_threads": -2})


def test_debug_dir_dumps_every_stage(exported, tmp_path):
    aotc.compile_and_package(exported, package_path=tmp_path / "m.pt2",
                             options={"debug_dir": str(tmp_path / "dbg")})
    names = sorted(p.name for p in (tmp_path / "dbg" / "model").iterdir())
    assert names == ["00_import.txt", "01_dce.txt", "02_fuse.txt", "03_prepack.txt",
                     "04_group.txt", "05_loops.txt", "06_plan.txt", "07_codegen.cpp",
                     "08_build.txt", "09_weights.txt", "10_metadata.json"]
    cpp = (tmp_path / "dbg" / "model" / "07_codegen.cpp").read_text()
    assert "aten.relu.default" in cpp and "aotc_sgemm_prepacked" in cpp
    loops = (tmp_path / "dbg" / "model" / "05_loops.txt").read_text()
    assert loops == "no generated loop nests (every kernel calls a template)\n"  # fused GEMMs
