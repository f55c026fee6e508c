"""Kernel objects built when aotc is installed, one set per ISA level of the installing
machine's architecture, so a model's first compile on a fresh machine links them instead of
compiling them.

`pip install` runs `main` (setup.py's build step) with the machine's C++ compiler and writes
the objects into the package's prebuilt/ folder under the names the build cache gives them
(compiler._kernel_object: source, headers, flags, compiler path and version). A compile looks
there first, so an object is used only where it is exactly what this machine would build: a
compiler upgraded since the install, a kernel source edited in an editable install, or a
target built for another architecture misses, and builds into the cache as before.

Standard library only (with aotc.errors, aotc.target and this package): setup.py imports it
in a build environment that has neither numpy nor torch.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

PREBUILT_DIR = Path(__file__).resolve().parent.parent / "prebuilt"


def find(name: str) -> Path | None:
    """The installed object called `name` (a cache object's file name), if there is one."""
    path = PREBUILT_DIR / name
    return path if path.is_file() else None


def build_all(dest: Path, isas: list[str] | None = None, stems: list[str] | None = None
              ) -> list[Path]:
    """Every shipped kernel (or those named by `stems`) for every level of this machine's
    architecture (or those named by `isas`), compiled into `dest`."""
    from ..target import ARCHITECTURES, host
    from .compiler import kernel_jobs, kernel_sources, run_in_parallel

    module = next((m for m in ARCHITECTURES if host.machine() in m.MACHINES), None)
    if module is None:
        return []
    levels = [t for name, t in module.LEVELS.items() if isas is None or name in isas]
    sources = [s for s in kernel_sources() if stems is None or s.stem in stems]
    dest.mkdir(parents=True, exist_ok=True)
    # every level's builds in one pool: one level's long GEMM build overlaps the others'
    return run_in_parallel([job for target in levels for job in kernel_jobs(target, sources, dest)])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="build aotc's shipped kernels for every ISA level")
    p.add_argument("dest", type=Path, help="the folder the objects go in")
    p.add_argument("--isa", action="append", help="only this level (repeatable)")
    p.add_argument("--kernel", action="append", help="only this kernel source's stem")
    args = p.parse_args(argv)
    start = time.perf_counter()
    objects = build_all(args.dest, args.isa, args.kernel)
    print(f"aotc: {len(objects)} kernel objects built in {time.perf_counter() - start:.1f} s "
          f"into {args.dest}", file=sys.stderr)
    return 0
