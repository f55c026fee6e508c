"""CMake builds of the C++ runtime's test programs and examples in cached folders
(build/cpp-tests/<name>), so a later run rebuilds only what changed; the examples' input."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import aotc

ROOT = Path(__file__).resolve().parents[2]
BUILDS = ROOT / "build" / "cpp-tests"
ASAN = "-fsanitize=address -fno-omit-frame-pointer -g"


def build_env() -> dict:
    """The environment for CMake and the model.py it runs: this checkout's aotc first."""
    src = str(Path(aotc.__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=src + (os.pathsep + path if path else ""))


def cmake_build(source: Path, name: str, *defines: str, torch_prefix: bool = False) -> Path:
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    out = BUILDS / name
    prefix = aotc.cmake_prefix_path
    if torch_prefix:
        import torch.utils

        prefix += ";" + torch.utils.cmake_prefix_path
    env = build_env()
    if not (out / "CMakeCache.txt").exists():
        configure = ["cmake", "-S", str(source), "-B", str(out), f"-DCMAKE_PREFIX_PATH={prefix}",
                     f"-DPython3_EXECUTABLE={sys.executable}", *defines]
        proc = subprocess.run(configure, capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = subprocess.run(["cmake", "--build", str(out), "-j", "2"], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def asan_defines() -> list[str]:
    return [f"-DCMAKE_C_FLAGS={ASAN}", f"-DCMAKE_CXX_FLAGS={ASAN}",
            "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address",
            "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address"]


def example_build(name: str, source: str, *defines: str, torch_prefix: bool = False) -> Path:
    # the package is rebuilt each session, so it always comes from this checkout's compiler
    (BUILDS / name / "model.pt2").unlink(missing_ok=True)
    return cmake_build(ROOT / "examples" / source, name, *defines, torch_prefix=torch_prefix)


def example_input(batch: int) -> np.ndarray:
    """The examples' input: x[i] = (i % 17) / 8 - 1."""
    return ((np.arange(batch * 10) % 17) / 8 - 1).astype(np.float32).reshape(batch, 10)
