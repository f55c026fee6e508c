"""Compile generated model code and the shipped kernels, with a content-addressed cache.

Hand-written kernels (kernels/*.cpp) are compiled once per (source, flags, compiler) -- a
target's flags and compiler, a cross compiler for another architecture -- into objects,
built at install (prebuilt.py) or on first use; a model links those its source needs
(kernel_set.py). A model's own
translation unit is cached by the hash of its source, flags and those objects, so compiling
the same program again is free.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from ..errors import BuildError
from ..target import Target
from ..target.host import cache_dir
from . import prebuilt
from .kernel_set import needed_sources
from .prelude import discard_prelude, prelude_flags
from .toolchain import INCLUDE_DIR, KERNELS_DIR, compiler, compiler_version, cxx_flags, output_beside


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


def kernel_headers_contents() -> bytes:
    """The bytes of kernel_headers(), in order: part of every build key."""
    return b"".join(p.read_bytes() for p in kernel_headers())


def _kernel_object(src: Path, target: Target, headers: bytes, root: Path | None = None) -> Path:
    """Where the object of kernel `src` for `target` lives: in `root`, or by default the one
    installed with aotc (prebuilt.py) where it is there, else in the cache."""
    cxx = compiler(target)
    # the compiler's path and version: two compilers may print the same version line
    key = _digest(src.read_bytes(), headers, " ".join(cxx_flags(target)), cxx,
                  compiler_version(cxx))[:24]
    name = f"{src.stem}-{key}.o"
    if root is not None:
        return root / name
    return prebuilt.find(name) or cache_dir() / "kernels" / name


def _build_kernel(src: Path, obj: Path, target: Target) -> Path:
    """Kernel `src` compiled into its cache object `obj` (_kernel_object), unless there."""
    if not obj.exists():
        cxx = compiler(target)
        obj.parent.mkdir(parents=True, exist_ok=True)
        tmp = output_beside(obj)
        try:
            _run([cxx, *cxx_flags(target), *include_flags(), "-c", str(src), "-o", str(tmp)],
                 obj.with_suffix(".log"), f"compiling kernel {src.name}")
            os.replace(tmp, obj)
        finally:
            tmp.unlink(missing_ok=True)
    return obj


def run_in_parallel(jobs: list) -> list:
    """Run the zero-argument callables `jobs` on up to one thread a core (each waits on a
    compiler process); results in order, the first failure raised."""
    if len(jobs) == 1:
        return [jobs[0]()]
    with ThreadPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
        futures = [pool.submit(job) for job in jobs]
        return [f.result() for f in futures]


def kernel_jobs(target: Target, sources: list[Path] | None = None,
                root: Path | None = None) -> list:
    """One zero-argument build (returning the object's path) per shipped kernel source
    (all of them by default) for `target`, into `root` (by default: _kernel_object's)."""
    headers = kernel_headers_contents()
    return [partial(_build_kernel, src, _kernel_object(src, target, headers, root), target)
            for src in (kernel_sources() if sources is None else sources)]


def build_kernels(target: Target, sources: list[Path] | None = None,
                  root: Path | None = None) -> list[Path]:
    """Objects of the shipped kernel `sources` for `target` (kernel_jobs), each compiled at
    most once, in parallel."""
    return run_in_parallel(kernel_jobs(target, sources, root))


def build_prelude(target: Target, opt_level: str = "-O3") -> bool:
    """The models' precompiled prelude (prelude.py) for `target`, built now unless there;
    whether it is there."""
    cxx = compiler(target)
    headers = kernel_headers_contents()
    return bool(prelude_flags(cxx, compiler_version(cxx), cxx_flags(target, opt_level),
                              include_flags(), headers, build_now=True))


def build_model(source: str, target: Target, opt_level: str = "-O3") -> tuple[Path, bool]:
    """(path of the model's shared library, whether it came from the cache). The library
    links the kernel objects its source needs (kernel_set.needed_sources); those and the
    model's own object compile in parallel, the model's with the precompiled prelude
    (prelude.py) where it is built."""
    cxx = compiler(target)
    sources = needed_sources(source, kernel_sources())
    headers = kernel_headers_contents()
    kernels = [(s, _kernel_object(s, target, headers)) for s in sources]
    flags = cxx_flags(target, opt_level)
    key = _digest(source, " ".join(flags), cxx, compiler_version(cxx),
                  *(obj.name for _, obj in kernels))[:32]
    out_dir = cache_dir() / "models"
    out_dir.mkdir(parents=True, exist_ok=True)
    so = out_dir / f"{key}.so"
    if so.exists():
        return so, True
    cpp = out_dir / f"{key}.cpp"
    # written whole, then renamed: another process building the same model at the same time
    # rewrites this file, and its compiler must never read it half written (it would link a
    # library without the model's code)
    tmp_cpp = output_beside(cpp)
    tmp_cpp.write_text(source)
    os.replace(tmp_cpp, cpp)
    tmp_obj = output_beside(out_dir / f"{key}.o")
    tmp = output_beside(so)
    try:
        def model_object() -> Path:
            prelude = prelude_flags(cxx, compiler_version(cxx), flags, include_flags(), headers)
            cmd = [cxx, *flags, *include_flags(), "-c", str(cpp), "-o", str(tmp_obj)]
            log = out_dir / f"{key}.log"
            try:
                _run([*cmd, *prelude], log, "compiling the generated model")
            except BuildError:
                if not prelude:
                    raise
                # a precompiled header damaged on disk can crash g++: without it, and if
                # that builds, it goes, for the next compile to build it again
                _run(cmd, log, "compiling the generated model")
                discard_prelude(prelude)
            return tmp_obj

        *objects, _ = run_in_parallel([*(partial(_build_kernel, s, obj, target)
                                      for s, obj in kernels), model_object])
        # -z defs: a symbol no linked object defines fails here, not when the library loads
        _run([cxx, *flags, "-shared", "-Wl,-z,defs", str(tmp_obj), *map(str, objects),
              "-o", str(tmp)], out_dir / f"{key}.link.log", "linking the generated model")
        os.replace(tmp, so)
    finally:
        tmp.unlink(missing_ok=True)
        tmp_obj.unlink(missing_ok=True)
    return so, False
