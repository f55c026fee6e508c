"""The models' precompiled prelude (cxx/prelude.py): built at a cache's second model compile
with a set of flags, not its first; included first by every later one; the same object
code with it as without; a damaged one costs time, never a wrong or failed build; builds
of it at once never hand g++ a half-written one."""
from __future__ import annotations

import subprocess

import pytest
import torch

import aotc
from aotc.cxx import compiler as cxx_compiler
from aotc.cxx.compiler import include_flags, kernel_headers_contents
from aotc.cxx.prelude import PRELUDE, prelude_flags
from aotc.cxx.toolchain import compiler, compiler_version, cxx_flags
from aotc.target import host_target
from builds_at_once import libraries_built_at_once
from models import ReadmeModel


class Scaled(torch.nn.Module):
    def __init__(self, k: float):
        super().__init__()
        self.k = k

    def forward(self, x):
        return torch.tanh(x) * self.k


def _compile(module, x, path):
    ep = torch.export.export(module.eval(), (x,))
    loaded = aotc.load_package(aotc.compile_and_package(ep, package_path=path))
    torch.testing.assert_close(loaded(x), ep.module()(x))


def _model_logs(cache):
    return {log: log.read_text() for log in (cache / "models").glob("*.log")
            if not log.name.endswith(".link.log")}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AOTC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_built_at_the_second_compile_and_included_from_then_on(cache, tmp_path):
    x = torch.randn(4, 10)
    _compile(ReadmeModel(), x, tmp_path / "a.pt2")
    assert not list(cache.glob(f"prelude/*/{PRELUDE}.gch"))  # a one-off compile: not built
    first = _model_logs(cache)
    assert len(first) == 1 and "-include" not in next(iter(first.values()))
    _compile(Scaled(2.0), x, tmp_path / "b.pt2")
    _compile(Scaled(3.0), x, tmp_path / "c.pt2")
    assert len(list(cache.glob(f"prelude/*/{PRELUDE}.gch"))) == 1
    later = [text for log, text in _model_logs(cache).items() if log not in first]
    assert len(later) == 2 and all(f"-include {cache}" in text for text in later)


def _object_code(cmd, out):
    """The disassembly of what `cmd` compiles, and the headers g++ reports reading (-H):
    "! file.gch" for a precompiled header it used."""
    read = subprocess.run([*cmd, "-H", "-o", str(out)], check=True, capture_output=True,
                          text=True).stderr
    dump = subprocess.run(["objdump", "-d", str(out)], check=True, capture_output=True,
                          text=True).stdout
    return dump.split("\n", 3)[3], read  # past the file name


def test_the_same_object_code_with_and_without_it(cache, tmp_path):
    _compile(ReadmeModel(), torch.randn(4, 10), tmp_path / "a.pt2")
    (cpp,) = (cache / "models").glob("*.cpp")  # the generated model, as compiled
    target = host_target()
    cxx, flags = compiler(target), cxx_flags(target)
    headers = kernel_headers_contents()
    prelude = prelude_flags(cxx, compiler_version(cxx), flags, include_flags(), headers,
                            build_now=True)
    assert prelude
    base = [cxx, *flags, *include_flags(), "-c", str(cpp)]
    plain, read_plain = _object_code(base, tmp_path / "a.o")
    with_prelude, read = _object_code([*base, *prelude], tmp_path / "b.o")
    assert f"! {prelude[1]}.gch" in read.splitlines() and "immintrin.h" not in read
    assert "immintrin.h" in read_plain
    assert with_prelude == plain


def test_a_damaged_prelude_costs_time_not_the_build(cache, tmp_path):
    x = torch.randn(3, 10)
    assert cxx_compiler.build_prelude(host_target())
    (gch,) = cache.glob(f"prelude/*/{PRELUDE}.gch")
    whole = gch.read_bytes()
    gch.write_bytes(b"not a precompiled header")  # g++ skips it for the text beside it
    _compile(Scaled(5.0), x, tmp_path / "d.pt2")
    assert all("-include" in text for text in _model_logs(cache).values())
    assert gch.exists()
    gch.write_bytes(whole[:len(whole) // 2])  # g++ stops at it: built without, and it goes
    _compile(Scaled(6.0), x, tmp_path / "e.pt2")
    assert not gch.exists()
    _compile(Scaled(8.0), x, tmp_path / "f.pt2")  # the next compile builds it again
    assert gch.exists() and gch.read_bytes() != whole[:len(whole) // 2]


def test_threads_building_it_at_once_each_get_a_working_model(cache, tmp_path):
    """Four builds that each find it wanted and missing build it together: each writes its
    own file, the first one published stays, no g++ reads a half-written or replaced one."""
    from aotc.passes.pipeline import compile_program

    x = torch.randn(4, 10)
    _compile(ReadmeModel(), x, tmp_path / "first.pt2")  # marks it wanted
    source = compile_program(torch.export.export(Scaled(7.0), (x,)), host_target(),
                             build=False).source
    libraries = libraries_built_at_once([source + f"// {i}\n" for i in range(4)])
    assert len(libraries) == 4 and all(b"aotc_abi_version" in lib for lib in libraries)
    (folder,) = cache.glob("prelude/*")
    assert sorted(p.name for p in folder.iterdir()) == [
        PRELUDE, f"{PRELUDE}.gch", "build.log", "wanted"]


def test_a_compiler_that_cannot_build_it_is_asked_once(cache, tmp_path, monkeypatch):
    target = host_target()
    cxx, flags = compiler(target), cxx_flags(target)
    headers = kernel_headers_contents()
    broken = [*flags, "-DAOTC_NO_SUCH_FLAG", "-fno-such-option"]  # g++ rejects the option
    assert prelude_flags(cxx, compiler_version(cxx), broken, include_flags(), headers,
                         build_now=True) == []
    (folder,) = cache.glob("prelude/*")
    assert (folder / "failed").exists() and "no-such-option" in (folder / "build.log").read_text()
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append(a))
    assert prelude_flags(cxx, compiler_version(cxx), broken, include_flags(), headers,
                         build_now=True) == []
    assert calls == []
