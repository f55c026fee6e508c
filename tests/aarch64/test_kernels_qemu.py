"""The shipped C++ sources cross-compiled for aarch64 at both target levels without warnings,
and the kernel drivers beside this file (naive-loop references) run under qemu-user."""
from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from cross_tools import BUILDS, CXX, LEVELS, ROOT, needs_tools, run_under_qemu

SRC = ROOT / "src" / "aotc"
HERE = Path(__file__).resolve().parent
# the flags aotc compiles its kernels with (build/toolchain.py's cxx_flags), -march aside
FLAGS = ["-O3", "-fopenmp", "-fPIC", "-std=c++17", "-fno-math-errno", "-fno-trapping-math",
         "-fno-gnu-unique", "-Wall", "-Wno-unused-variable", "-Wno-unused-function"]
INCLUDES = ["-I", str(SRC / "kernels"), "-I", str(SRC / "include" / "aotc")]
# driver -> the kernel objects it links
DRIVERS = {
    "gemm_test": ["kernels-gemm", "kernels-gemm_bf16"],
    "conv_test": ["kernels-conv", "kernels-gemm"],
    "attention_test": ["kernels-attention"],
    "sort_scan_test": ["kernels-sort", "kernels-scan"],
    "crc_test": ["kernels-checksum"],
    "qgemm_test": ["kernels-gemm_int8"],
    "w4_test": ["kernels-gemm_w4", "kernels-gemm"],
    "fft_test": ["kernels-fft"],
}
# aotc_model_abi.h is the tail of a generated model, which defines what it uses first: the
# models of test_models_qemu.py compile it
HEADERS = sorted(set((SRC / "kernels").glob("*.h")) - {SRC / "kernels" / "aotc_model_abi.h"}) + [
    SRC / "include" / "aotc" / name for name in ("aotc_abi.h", "aotc_runtime.h", "aotc.hpp")]

pytestmark = needs_tools


def sources() -> list[Path]:
    return sorted((SRC / "kernels").glob("*.cpp")) + sorted((SRC / "runtime_cpp").glob("*.cpp"))


def build_key(level: str) -> str:
    h = hashlib.sha256(" ".join([level, *FLAGS]).encode())
    h.update(subprocess.run([CXX, "--version"], capture_output=True, text=True).stdout.encode())
    # the drivers too: they are linked into the same folder
    for path in sorted([*(SRC / "kernels").glob("*"), *(SRC / "runtime_cpp").glob("*"),
                        *(SRC / "include" / "aotc").glob("*"), *HERE.glob("*.cpp"), *HERE.glob("*.h")]):
        if path.is_file():
            h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def compile_level(level: str) -> Path:
    """Objects of every kernel and runtime source for `level` (compiled once per content),
    each with its compiler log beside it."""
    out = BUILDS / f"{level}-{build_key(level)}"
    if (out / "complete").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    pending = [(src, out / f"{src.parent.name.split('_')[0]}-{src.stem}") for src in sources()]
    running: list[tuple[Path, subprocess.Popen]] = []
    failed = []
    while pending or running:
        while pending and len(running) < (os.cpu_count() or 2):
            src, stem = pending.pop()
            log = open(stem.with_suffix(".log"), "w")
            cmd = [CXX, *FLAGS, f"-march={level}", *INCLUDES, "-c", str(src), "-o", f"{stem}.o"]
            running.append((stem, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)))
            log.close()
        stem, proc = running.pop(0)
        if proc.wait(timeout=900) != 0:
            failed.append(f"{stem.name}:\n{stem.with_suffix('.log').read_text()}")
    assert not failed, "\n".join(failed)
    (out / "complete").touch()
    return out


@pytest.fixture(scope="session")
def objects():
    """objects(level): the folder of that level's objects and logs, built on first use."""
    built: dict[str, Path] = {}

    def get(level: str) -> Path:
        if level not in built:
            built[level] = compile_level(level)
        return built[level]

    return get


@pytest.mark.parametrize("level", LEVELS)
def test_sources_compile_without_warnings(objects, level):
    logs = sorted(objects(level).glob("*.log"))
    assert len(logs) == len(sources())
    warnings = [f"{log.stem}: {line}" for log in logs for line in log.read_text().splitlines()
                if "warning" in line]
    assert not warnings, "\n".join(warnings)


@pytest.mark.parametrize("level", LEVELS)
def test_headers_compile_alone(level):
    for header in HEADERS:  # each the only include of an empty translation unit
        cmd = [CXX, *FLAGS, f"-march={level}", *INCLUDES, "-fsyntax-only", "-include", str(header),
               "-x", "c++", os.devnull]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0 and "warning" not in proc.stderr, f"{header.name}:\n{proc.stderr}"


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("level", LEVELS)
def test_kernels_under_qemu(objects, level, driver):
    out = objects(level)
    program = out / driver
    if not program.exists():
        cmd = [CXX, *FLAGS, "-Wextra", f"-march={level}", *INCLUDES, str(HERE / f"{driver}.cpp"),
               *(str(out / f"{name}.o") for name in DRIVERS[driver]), "-o", str(program)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
    proc = run_under_qemu(program, cpu=LEVELS[level])
    lines = proc.stdout.splitlines()
    failed = [line for line in lines if line.startswith("FAILED")]
    assert proc.returncode == 0 and not failed, "\n".join(failed) or proc.stdout + proc.stderr
    assert lines and lines[-1].endswith(" 0 failed"), proc.stdout
