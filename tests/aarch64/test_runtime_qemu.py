"""aotc's C++ runtime cross-built for aarch64 with the toolchain file of aotc's CMake package,
and a program linking it run under qemu-user: it opens packages whose target it must check
(built here as bare archives: the target check comes before the model library is read)."""
from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from cross_tools import BUILDS, LEVELS, ROOT, needs_tools, run_under_qemu

from aotc.package.schema import FORMAT_VERSION
from aotc.target import target_of_arch

CMAKE_PREFIX = ROOT / "src" / "aotc" / "share" / "cmake"
TOOLCHAIN = CMAKE_PREFIX / "aotc" / "aarch64-linux-gnu.cmake"
PROJECT = Path(__file__).resolve().parent / "runtime"

pytestmark = [needs_tools, pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")]


@pytest.fixture(scope="module")
def open_packages() -> Path:
    out = BUILDS / "runtime"
    log = []
    if not (out / "CMakeCache.txt").exists():
        configure = ["cmake", "-S", str(PROJECT), "-B", str(out), f"-DCMAKE_TOOLCHAIN_FILE={TOOLCHAIN}",
                     f"-DCMAKE_PREFIX_PATH={CMAKE_PREFIX}"]
        proc = subprocess.run(configure, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = subprocess.run(["cmake", "--build", str(out), "-j", "2"], capture_output=True, text=True,
                          timeout=600)
    log.append(proc.stdout + proc.stderr)
    assert proc.returncode == 0, log[-1]
    assert "warning" not in log[-1], log[-1]
    return out / "open_packages"


def bare_package(path: Path, arch: str, **target: str) -> Path:
    """An aotc package of one model whose metadata names `arch` (and `target`'s other fields),
    without its library."""
    meta = {"format_version": str(FORMAT_VERSION),
            "target": {"device": "cpu", "arch": arch, "isa": "test", **target}}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive_format", "pt2")
        z.writestr("aotc/version", str(FORMAT_VERSION))
        z.writestr("aotc/model/metadata.json", json.dumps(meta))
    return path


def open_all(program: Path, cpu: str, *packages: Path) -> dict[str, str]:
    proc = run_under_qemu(program, *map(str, packages), cpu=cpu)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "aotc runtime 1", proc.stdout
    return {Path(line.split(": ", 1)[0]).name: line.split(": ", 1)[1] for line in lines[1:]}


def test_runtime_is_an_aarch64_library(open_packages):
    library = next(open_packages.parent.glob("libaotc_runtime.so*"))
    assert library.read_bytes()[18:20] == (183).to_bytes(2, "little")  # e_machine EM_AARCH64


def test_refusals_under_qemu(open_packages, tmp_path):
    (tmp_path / "not_a_zip.pt2").write_bytes(b"no archive here")
    results = open_all(open_packages, LEVELS["armv8-a"], tmp_path / "missing.pt2",
                       tmp_path / "not_a_zip.pt2",
                       bare_package(tmp_path / "x86.pt2", "x86-64-v3"),
                       bare_package(tmp_path / "armv9.pt2", "armv9-a"),
                       bare_package(tmp_path / "v82.pt2", "armv8.2-a+fp16+dotprod"),
                       bare_package(tmp_path / "v80.pt2", "armv8-a"),
                       bare_package(tmp_path / "rec.pt2", "armv8.2-a+fp16+dotprod",
                                    cpu_features="asimd asimddp atomics crc32 fp"))
    assert results["missing.pt2"].startswith("5 ") and "does not exist" in results["missing.pt2"]
    assert "not a valid .pt2 package" in results["not_a_zip.pt2"]
    assert ("compiled for x86_64 (x86-64-v3, isa 'test'): it runs on an x86_64 machine, and this "
            "is aarch64") in results["x86.pt2"]
    assert "unknown target arch 'armv9-a'" in results["armv9.pt2"]
    # a Cortex-A53 (Armv8.0) has the CRC instructions but neither LSE, RDMA, fp16 nor dotprod:
    # the features a package records (as /proc/cpuinfo names them), or, in one written before
    # target.cpu_features, those of its -march level and extensions (as g++ names them)
    assert "this CPU lacks asimddp atomics. Recompile with" in results["rec.pt2"]
    assert "this CPU lacks lse rdma fp16 dotprod" in results["v82.pt2"]
    # the baseline passes the target check; the package then lacks its library
    assert "lacks" not in results["v80.pt2"] and "model.so" in results["v80.pt2"]


def test_higher_level_on_a_cpu_that_has_it(open_packages, tmp_path):
    results = open_all(open_packages, LEVELS["armv8.2-a+fp16+dotprod"],
                       bare_package(tmp_path / "v82.pt2", "armv8.2-a+fp16+dotprod"),
                       bare_package(tmp_path / "rec.pt2", "armv8.2-a+fp16+dotprod",
                                    cpu_features=" ".join(sorted(target_of_arch(
                                        "armv8.2-a+fp16+dotprod").features))))
    for name in ("v82.pt2", "rec.pt2"):
        assert "lacks" not in results[name] and "model.so" in results[name]
