"""The models' precompiled prelude: kernels/aotc_model_prelude.h (the headers every generated
model includes first) compiled once per compiler, flags and header contents into a GCC
precompiled header, which each model's compile then includes first (`-include`); the
model's own includes of the same headers are then no-ops behind their guards. A small
model's compile went from 0.8 to 0.2 s, with the same object code.

The precompiled header is large (about 60 MB for AVX-512) and takes about 2 s to build, so
a cache builds it at its second model compile with those flags, not its first (a one-off
compile stays as fast as without it); `aotc prepare` builds it ahead of time. Where it
cannot be used (another compiler's, damaged, flags that differ), g++ reads the header text
beside it instead; where g++ stops at it (cut short), compiler.build_model compiles without
it and removes it; a compiler that cannot build it is not asked again (the cache folder's
build.log says why). The prelude changes how long a compile takes, never what it produces.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from ..target.host import cache_dir
from .toolchain import KERNELS_DIR, output_beside

PRELUDE = "aotc_model_prelude.h"


def _folder(cxx: str, version: str, flags: list[str], includes: list[str],
            headers: bytes) -> Path:
    h = hashlib.sha256()
    for part in (cxx, version, " ".join(flags), " ".join(includes)):
        h.update(part.encode() + b"\0")
    h.update(headers)
    return cache_dir() / "prelude" / h.hexdigest()[:24]


def _publish(tmp: Path, final: Path) -> None:
    """`tmp` as `final` unless that exists: once there, a file is never replaced, since a g++
    may be between checking the precompiled header and loading it."""
    try:
        os.link(tmp, final)
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links
        if not final.exists():
            os.replace(tmp, final)


def _build(folder: Path, cxx: str, flags: list[str], includes: list[str]) -> bool:
    """The precompiled header into `folder`, written whole under a name of its own, then
    published (processes and threads building it at once each write their own; the first
    published stays); whether it is there."""
    gch = folder / f"{PRELUDE}.gch"
    tmp = output_beside(gch)
    cmd = [cxx, *flags, *includes, "-x", "c++-header", str(folder / PRELUDE), "-o", str(tmp)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        log = output_beside(folder / "build.log")
        log.write_text(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
        os.replace(log, folder / "build.log")
        if proc.returncode == 0:
            _publish(tmp, gch)
    except (OSError, subprocess.TimeoutExpired):
        pass  # the models compile without it, and report what fails in their own logs
    finally:
        tmp.unlink(missing_ok=True)
    if not gch.exists():  # a compiler that cannot build it is not asked again (build.log)
        (folder / "failed").touch()
    return gch.exists()


def prelude_flags(cxx: str, version: str, flags: list[str], includes: list[str],
                  headers: bytes, build_now: bool = False) -> list[str]:
    """The flags that include the precompiled prelude first, for a compile with `cxx`
    (`version`), `flags` and `includes` of headers whose contents are `headers`; [] while it
    is not built. It is built here when `build_now`, or when a compile asked for it before."""
    folder = _folder(cxx, version, flags, includes, headers)
    text = folder / PRELUDE
    if (folder / "failed").exists():
        return []
    if not (folder / f"{PRELUDE}.gch").exists():
        wanted = folder / "wanted"
        if not (build_now or wanted.exists()):
            folder.mkdir(parents=True, exist_ok=True)
            wanted.touch()
            return []
        folder.mkdir(parents=True, exist_ok=True)
        if not text.exists():  # what g++ reads where the precompiled form does not fit
            tmp = output_beside(text)
            try:
                shutil.copyfile(KERNELS_DIR / PRELUDE, tmp)
                _publish(tmp, text)
            finally:
                tmp.unlink(missing_ok=True)
        if not _build(folder, cxx, flags, includes):
            return []
    return ["-include", str(text)]


def discard_prelude(flags: list[str]) -> None:
    """Remove the precompiled header that `flags` (prelude_flags') include: a model that
    failed to compile with it compiled without it. A g++ reading it keeps its open file; the
    next compile builds it again."""
    text = Path(flags[-1])
    (text.parent / "wanted").touch()
    Path(f"{text}.gch").unlink(missing_ok=True)
