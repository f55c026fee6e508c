"""The C++ toolchain: which compiler and which flags build code for a target, where the
shipped kernel sources and public headers are, and how a build writes its outputs. What a
target is: target/."""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import BuildError
from ..target import Target

KERNELS_DIR = Path(__file__).resolve().parent.parent / "kernels"
# the public C headers (the ABI that model.so exports), shipped for C/C++ users too
INCLUDE_DIR = Path(__file__).resolve().parent.parent / "include" / "aotc"


def output_beside(final: Path) -> Path:
    """A new empty file of its own beside `final` (its suffix too), to be written whole and
    then renamed to `final`: processes and threads building the same output at once never
    read one another's half-written file."""
    fd, tmp = tempfile.mkstemp(dir=final.parent, suffix=final.suffix)
    os.close(fd)
    return Path(tmp)


def compiler(target: Target) -> str:
    """The path of the C++ compiler for `target` (its environment variable overrides it)."""
    cxx = os.environ.get(target.compiler_env, target.compiler)
    path = shutil.which(cxx)
    if path is None:
        raise BuildError(f"C++ compiler {cxx!r} was not found on PATH; install {target.compiler} "
                         f"(12 or newer) or point the {target.compiler_env} environment variable "
                         "at one")
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
    return [opt_level, *target.arch_flags, "-fopenmp", "-fPIC", "-std=c++17",
            "-fno-math-errno", "-fno-trapping-math", "-fno-gnu-unique", "-Wall",
            "-Wno-unused-variable", "-Wno-unused-function"]
