"""CMake builds of the C++ runtime's test programs and examples in cached folders
(build/cpp-tests/<name>), so a later run rebuilds only what changed; the examples' input.
Test processes running side by side (pytest -n) build a folder one at a time, and once a
run: the first builds it, the others find it built in this run and use it as it is."""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
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


@contextmanager
def built_once(out: Path):
    """Holds `out`'s lock; yields whether the body should build it (not yet built by
    another process of this test run)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    stamp = out / ".built-in-run"
    with open(out.parent / f"{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if run and stamp.exists() and stamp.read_text() == run:
            yield False
            return
        stamp.unlink(missing_ok=True)
        yield True
        if run:
            stamp.write_text(run)


def cmake_build(source: Path, name: str, *defines: str, torch_prefix: bool = False,
                stale: tuple[str, ...] = ()) -> Path:
    """build/cpp-tests/<name> from `source`; the files named in `stale` are removed first,
    so that the build makes them anew."""
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    out = BUILDS / name
    with built_once(out) as build:
        if build:
            for f in stale:
                (out / f).unlink(missing_ok=True)
            _configure_and_build(source, out, defines, torch_prefix)
    return out


def _configure_and_build(source: Path, out: Path, defines, torch_prefix: bool) -> None:
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


def asan_defines() -> list[str]:
    return [f"-DCMAKE_C_FLAGS={ASAN}", f"-DCMAKE_CXX_FLAGS={ASAN}",
            "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address",
            "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address"]


def example_build(name: str, source: str, *defines: str, torch_prefix: bool = False) -> Path:
    # the package is rebuilt each run, so it always comes from this checkout's compiler
    return cmake_build(ROOT / "examples" / source, name, *defines, torch_prefix=torch_prefix,
                       stale=("model.pt2",))


def example_input(batch: int) -> np.ndarray:
    """The examples' input: x[i] = (i % 17) / 8 - 1."""
    return ((np.arange(batch * 10) % 17) / 8 - 1).astype(np.float32).reshape(batch, 10)
