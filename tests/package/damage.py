"""Damaged variants of a valid package, and a worker process that loads them.

A damage is a list of edits (truncation, flipped bytes, an edited, deleted or garbage
metadata field, a missing or duplicated entry). The worker loads each damaged package
with numpy only and runs it; it answers one line per package, so a crash (the worker
dying) is seen and blamed on the package that caused it.
"""
from __future__ import annotations

import json
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

DELETE = object()  # the value that removes a metadata field

WORKER = r"""
import sys
import numpy as np
import aotc.runtime as rt
from aotc.errors import AotcError, PackageError

x = np.random.default_rng(0).standard_normal((3, 10)).astype(np.float32)
for line in sys.stdin:
    path = line.strip()
    try:
        model = rt.load_package(path)
    except PackageError as e:
        print("PackageError", str(e).replace("\n", " ")[:300], flush=True)
        continue
    except BaseException as e:
        print("UNTYPED", type(e).__name__, str(e).replace("\n", " ")[:300], flush=True)
        continue
    try:
        model(x)
        print("ok", flush=True)
    except AotcError as e:
        print("ok-call-error", type(e).__name__, str(e).replace("\n", " ")[:200], flush=True)
    except BaseException as e:
        print("UNTYPED-CALL", type(e).__name__, str(e).replace("\n", " ")[:300], flush=True)
"""


def metadata_paths(meta, prefix=()) -> list[tuple]:
    """Every path (keys and list indices) into the metadata tree."""
    out = [prefix] if prefix else []
    if isinstance(meta, dict):
        for k, v in meta.items():
            out += metadata_paths(v, prefix + (k,))
    elif isinstance(meta, list):
        for k, v in enumerate(meta):
            out += metadata_paths(v, prefix + (k,))
    return out


def _set(meta, path: tuple, value) -> None:
    parent = meta
    for key in path[:-1]:
        parent = parent[key]
    if value is DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value


def _entries(path: Path) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(path) as zf:
        return [(info.filename, zf.read(info)) for info in zf.infolist()]


def write_entries(path: Path, entries: list[tuple[str, bytes]]) -> None:
    """A package from (name, data) pairs, weights.bin stored and 64-byte aligned as aotc
    writes it (so a damage is only what the edit did)."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            if name.endswith("weights.bin"):
                header_end = zf.fp.tell() + 30 + len(name.encode()) + 4
                pad = (-header_end) % 64
                info.extra = struct.pack("<HH", 0xD935, pad) + b"\0" * pad
            else:
                info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)


def apply(src: Path, dst: Path, edits: list[tuple]) -> None:
    """Write `src` with `edits` applied to `dst`."""
    entries = _entries(src)
    raw: bytes | None = None
    for edit in edits:
        kind = edit[0]
        if kind in ("truncate", "flip"):
            if raw is None:
                write_entries(dst, entries)
                raw = dst.read_bytes()
            if not raw:
                continue
            pos = edit[1] % len(raw)
            raw = raw[:pos] if kind == "truncate" else raw[:pos] + bytes([raw[pos] ^ edit[2]]) + raw[pos + 1:]
            continue
        if raw is not None:
            raise ValueError("byte-level edits come last")
        names = [n for n, _ in entries]
        if kind == "field":
            try:
                k = names.index("aotc/model/metadata.json")
                meta = json.loads(entries[k][1])
                _set(meta, edit[1], edit[2])
            except (ValueError, KeyError, IndexError, TypeError):
                continue  # an earlier edit removed the entry or the path
            entries[k] = (names[k], json.dumps(meta, allow_nan=True).encode())
        elif kind == "metadata_bytes":
            if "aotc/model/metadata.json" in names:
                k = names.index("aotc/model/metadata.json")
                entries[k] = (names[k], edit[1])
        elif kind == "drop":
            entries = [(n, d) for n, d in entries if n != edit[1]]
        elif kind == "duplicate":
            entries.append((edit[1], edit[2]))
        else:
            raise ValueError(f"unknown edit {kind}")
    if raw is not None:
        dst.write_bytes(raw)
    else:
        write_entries(dst, entries)


class Worker:
    """A numpy-only process that loads packages; restarted after a crash."""

    def __init__(self, root: Path, env: dict):
        self.root, self.env, self.proc = root, env, None

    def _start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     env=self.env, cwd=self.root)

    def load(self, path: Path) -> str:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        assert self.proc is not None and self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(f"{path}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            self.proc = None
            return f"CRASH exit {code}"
        return line.strip()

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def json_values(st):
    """Hypothesis strategy of JSON values, odd ones included (huge, negative, NaN, deep)."""
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                        st.sampled_from([0, -1, 1, 63, 64, 2**31, 2**62, 2**63, -(2**63)]),
                        st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                        st.sampled_from(["s0", "s0*2", "float32", "tensor", "leaf", "x86-64-v4"]))
    return st.recursive(scalars, lambda kids: st.one_of(
        st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=6), kids, max_size=4)),
        max_leaves=8)


__all__ = ["DELETE", "Worker", "apply", "json_values", "metadata_paths"]
