"""Packages held by file-like objects (`io.BytesIO`, an open file): the reference's FileLike.

A package is written to a temporary file and copied into the object, and read back the same
way, since the loader maps weights from a real file. Torch-free.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


def is_filelike(obj) -> bool:
    return not isinstance(obj, (str, bytes, os.PathLike)) and (
        hasattr(obj, "write") or hasattr(obj, "read"))


@contextmanager
def spilled(obj) -> Iterator[str]:
    """The bytes of a readable file-like object as a temporary .pt2 file (deleted afterwards)."""
    if not hasattr(obj, "read"):
        from ..errors import PackageError

        raise PackageError(f"cannot read a package from a {type(obj).__name__}: it has no read()")
    fd, path = tempfile.mkstemp(prefix="aotc-", suffix=".pt2")
    try:
        if hasattr(obj, "seek"):
            obj.seek(0)
        with os.fdopen(fd, "wb") as f:
            shutil.copyfileobj(obj, f)
        yield path
    finally:
        os.unlink(path)


@contextmanager
def staged(obj) -> Iterator[str]:
    """A temporary .pt2 path whose content is copied into writable `obj` when the block ends."""
    folder = tempfile.mkdtemp(prefix="aotc-")
    path = os.path.join(folder, "package.pt2")
    try:
        yield path
        if hasattr(obj, "seek"):
            obj.seek(0)
        if hasattr(obj, "truncate"):
            obj.truncate()
        with open(path, "rb") as f:
            shutil.copyfileobj(f, obj)
        if hasattr(obj, "seek"):
            obj.seek(0)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
