"""The C++ toolchain: which compiler, which flags for which ISA, where builds are cached."""
from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import BuildError

KERNELS_DIR = Path(__file__).resolve().parent.parent / "kernels"
# the public C headers (the ABI that model.so exports), shipped for C/C++ users too
INCLUDE_DIR = Path(__file__).resolve().parent.parent / "include" / "aotc"


@dataclass(frozen=True)
class Target:
    """What the generated code is compiled for; recorded in each package's metadata."""

    device: str  # "cpu" (the only backend so far)
    arch: str  # -march value: x86-64, x86-64-v3 (AVX2+FMA), x86-64-v4 (AVX-512), native
    isa: str  # human-readable: "avx512", "avx2", "sse2", "native"


# CPU features each -march level needs (what the loader checks before dlopen)
ARCH_FEATURES = {
    "x86-64": set(),
    "x86-64-v3": {"avx2", "fma", "bmi2"},
    "x86-64-v4": {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx2", "fma"},
}


@functools.cache
def cpu_flags() -> frozenset[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def missing_features(arch: str) -> set[str]:
    """CPU features that `arch` code needs and this machine lacks (empty: it can run)."""
    if arch == "native":
        return set()
    if platform.machine() not in ("x86_64", "AMD64"):
        return {f"an x86-64 processor (this is {platform.machine()})"}
    return set(ARCH_FEATURES.get(arch, set())) - set(cpu_flags())


@functools.cache
def host_target() -> Target:
    if platform.machine() not in ("x86_64", "AMD64"):
        return Target("cpu", "native", "native")
    flags = cpu_flags()
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx2", "fma"} <= flags:
        return Target("cpu", "x86-64-v4", "avx512")
    if {"avx2", "fma", "bmi2"} <= flags:
        return Target("cpu", "x86-64-v3", "avx2")
    return Target("cpu", "x86-64", "sse2")


def target_for(isa: str | None) -> Target:
    """The host's target, or the one named by the `isa` option."""
    if isa in (None, "", "host"):
        return host_target()
    table = {"avx512": "x86-64-v4", "avx2": "x86-64-v3", "sse2": "x86-64", "native": "native"}
    if isa not in table:
        raise ValueError(f"unknown isa {isa!r}; expected one of {sorted(table)} or 'host'")
    return Target("cpu", table[isa], isa)


def compiler() -> str:
    cxx = os.environ.get("CXX", "g++")
    path = shutil.which(cxx)
    if path is None:
        raise BuildError(f"C++ compiler {cxx!r} was not found on PATH; install g++ (12 or newer) "
                         "or point the CXX environment variable at one")
    return path


@functools.cache
def compiler_version(cxx: str) -> str:
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BuildError(f"cannot run the C++ compiler {cxx}: {e}") from None
    return out.stdout.splitlines()[0] if out.stdout else cxx


def cxx_flags(target: Target, opt_level: str = "-O3") -> list[str]:
    # -fno-gnu-unique: a library with STB_GNU_UNIQUE symbols can never be unloaded, so a
    # C++ loader that closes a model would keep it mapped for the life of the process.
    # -fno-trapping-math: without it g++ keeps relu, exp and GELU loops scalar on AVX2.
    return [opt_level, f"-march={target.arch}", "-fopenmp", "-fPIC", "-std=c++17",
            "-fno-math-errno", "-fno-trapping-math", "-fno-gnu-unique", "-Wall",
            "-Wno-unused-variable", "-Wno-unused-function"]


def cache_dir() -> Path:
    """Where builds and extracted libraries live (callers create their sub-folders)."""
    root = os.environ.get("AOTC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "aotc")
    return Path(root)
