"""Compile generated model code and the shipped kernels, with a content-addressed cache.

Hand-written kernels (kernels/*.cpp) are compiled once per (source, flags, compiler) -- a
target's flags and compiler, a cross compiler for another architecture -- into objects that
every model of the target links; a model's own translation unit is cached by the
hash of its source, flags and those objects, so compiling the same program again is free.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from ..errors import BuildError
from ..target import Target
from ..target.host import cache_dir
from .toolchain import INCLUDE_DIR, KERNELS_DIR, compiler, compiler_version, cxx_flags


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()


def _run(cmd: list[str], log: Path, what: str) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        log.write_text(f"$ {' '.join(cmd)}\n{e}\n")
        raise BuildError(f"{what}: could not run the C++ compiler ({e})", str(log)) from None
    log.write_text(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    if proc.returncode != 0:
        first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr[:300])
        raise BuildError(f"{what} failed (exit {proc.returncode}): {first.strip()}", str(log))


def _atomic_output(final: Path):
    fd, tmp = tempfile.mkstemp(dir=final.parent, suffix=final.suffix)
    os.close(fd)
    return Path(tmp)


def include_flags() -> list[str]:
    """The -I flags every aotc translation unit compiles with."""
    return ["-I", str(KERNELS_DIR), "-I", str(INCLUDE_DIR)]


def kernel_sources() -> list[Path]:
    return sorted(KERNELS_DIR.glob("*.cpp"))


def kernel_headers() -> list[Path]:
    """Every file a kernel source includes: its key covers them all (checksum.cpp compiles
    the C++ runtime's CRC-32)."""
    runtime = KERNELS_DIR.parent / "runtime_cpp"
    return sorted(KERNELS_DIR.glob("*.h")) + [INCLUDE_DIR / "aotc_abi.h", runtime / "crc32.h",
                                              runtime / "crc32.cpp"]


def build_kernels(target: Target) -> list[Path]:
    """Objects of every shipped kernel source for `target`, compiled at most once."""
    cxx = compiler(target)
    flags = cxx_flags(target)
    headers = b"".join(p.read_bytes() for p in kernel_headers())
    out_dir = cache_dir() / "kernels"
    out_dir.mkdir(parents=True, exist_ok=True)
    objects = []
    for src in kernel_sources():
        # the compiler's path and version: two compilers may print the same version line
        key = _digest(src.read_bytes(), headers, " ".join(flags), cxx,
                      compiler_version(cxx))[:24]
        obj = out_dir / f"{src.stem}-{key}.o"
        if not obj.exists():
            tmp = _atomic_output(obj)
            try:
                _run([cxx, *flags, *include_flags(), "-c", str(src), "-o", str(tmp)],
                     out_dir / f"{src.stem}-{key}.log", f"compiling kernel {src.name}")
                os.replace(tmp, obj)
            finally:
                tmp.unlink(missing_ok=True)
        objects.append(obj)
    return objects


def build_model(source: str, target: Target, opt_level: str = "-O3") -> tuple[Path, bool]:
    """(path of the model's shared library, whether it came from the cache)."""
    cxx = compiler(target)
    objects = build_kernels(target)
    flags = cxx_flags(target, opt_level)
    key = _digest(source, " ".join(flags), cxx, compiler_version(cxx),
                  *(o.name for o in objects))[:32]
    out_dir = cache_dir() / "models"
    out_dir.mkdir(parents=True, exist_ok=True)
    so = out_dir / f"{key}.so"
    if so.exists():
        return so, True
    cpp = out_dir / f"{key}.cpp"
    # written whole, then renamed: another process building the same model at the same time
    # rewrites this file, and its compiler must never read it half written (it would link a
    # library without the model's code)
    tmp_cpp = _atomic_output(cpp)
    tmp_cpp.write_text(source)
    os.replace(tmp_cpp, cpp)
    tmp = _atomic_output(so)
    try:
        _run([cxx, *flags, "-shared", *include_flags(), str(cpp), *map(str, objects),
              "-o", str(tmp)], out_dir / f"{key}.log", "compiling the generated model")
        os.replace(tmp, so)
    finally:
        tmp.unlink(missing_ok=True)
    return so, False
