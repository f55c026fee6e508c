"""The .pt2 package: a zip holding, per model, metadata.json, model.so, model.cpp and
weights.bin. Torch-free, so the runtime can read it with numpy alone.

weights.bin and model.so are stored uncompressed with their data 64-byte aligned inside the
archive, so a loader maps them straight from the .pt2 file without a zip library; each
constant inside weights.bin is 64-byte aligned too.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import PackageError
from .schema import FORMAT_VERSION, check_constants_fit, validate

ARCHIVE_FORMAT = "pt2"
DEFAULT_MODEL = "model"
ALIGN = 64
_PAD_EXTRA_ID = 0xD935  # the zip extra field id used for alignment padding


@dataclass
class ModelFiles:
    metadata: dict
    library: bytes
    source: str
    weights: bytes


def _entry(model: str, name: str) -> str:
    return f"aotc/{model}/{name}"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _aligned_info(zf: zipfile.ZipFile, name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    header_end = zf.fp.tell() + 30 + len(name.encode()) + 4
    pad = (-header_end) % ALIGN
    info.extra = struct.pack("<HH", _PAD_EXTRA_ID, pad) + b"\0" * pad
    return info


def write_package(path: str | os.PathLike, models: dict[str, ModelFiles]) -> str:
    """Write the archive atomically; refuses to replace anything but an older .pt2."""
    path = Path(path)
    if path.is_dir():
        raise PackageError(f"{path} is a directory; give package_path a file name ending in .pt2")
    if path.exists() and not _is_package(path):
        raise PackageError(f"{path} exists and is not an aotc/pt2 package; refusing to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".aotc-", suffix=".pt2")
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w") as zf:
            zf.writestr("archive_format", ARCHIVE_FORMAT)
            zf.writestr("aotc/version", str(FORMAT_VERSION))
            for name, files in models.items():
                meta = dict(files.metadata)
                meta["sha256"] = {"model.so": sha256(files.library),
                                  "weights.bin": sha256(files.weights)}
                zf.writestr(_entry(name, "metadata.json"), json.dumps(meta, indent=1))
                zf.writestr(_entry(name, "model.cpp"), files.source,
                            compress_type=zipfile.ZIP_DEFLATED)
                zf.writestr(_aligned_info(zf, _entry(name, "model.so")), files.library)
                zf.writestr(_aligned_info(zf, _entry(name, "weights.bin")), files.weights)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return str(path)


def _is_package(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as zf:
            return "archive_format" in zf.namelist()
    except (zipfile.BadZipFile, OSError):
        return False


class PackageReader:
    """Reads and verifies one model of a package."""

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        if not os.path.isfile(self.path):
            raise PackageError(f"package {self.path} does not exist")
        try:
            self.zf = zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, OSError) as e:
            raise PackageError(f"{self.path} is not a valid .pt2 package: {e}") from None
        listed = self.zf.namelist()
        names = set(listed)
        if len(names) != len(listed):
            twice = sorted({n for n in listed if listed.count(n) > 1})
            raise PackageError(f"{self.path} holds the entries {twice} more than once; the package "
                               "is corrupt")
        if "aotc/version" not in names:
            if "archive_format" in names:
                raise PackageError(f"{self.path} is a .pt2 archive but not an aotc package "
                                   "(no aotc/version entry); was it written by another compiler?")
            raise PackageError(f"{self.path} is not a .pt2 package (no archive_format entry)")
        version = self._read("aotc/version").decode(errors="replace").strip()
        if version != str(FORMAT_VERSION):
            raise PackageError(f"{self.path} has package format version {version}; this aotc reads "
                               f"version {FORMAT_VERSION}")
        self.models = sorted({n.split("/")[1] for n in names
                              if n.startswith("aotc/") and n.count("/") == 2})

    def close(self) -> None:
        self.zf.close()

    def _read(self, name: str) -> bytes:
        try:
            return self.zf.read(name)
        except KeyError:
            raise PackageError(f"{self.path} is missing {name}") from None
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error,
                NotImplementedError) as e:
            raise PackageError(f"{self.path}: entry {name} is corrupt ({e})") from None

    def resolve(self, model: str | None) -> str:
        if model is None:
            if DEFAULT_MODEL in self.models or len(self.models) != 1:
                model = DEFAULT_MODEL
            else:
                model = self.models[0]
        if model not in self.models:
            raise PackageError(f"{self.path} has no model named {model!r}; it holds {self.models}")
        return model

    def metadata(self, model: str) -> dict:
        try:
            meta = json.loads(self._read(_entry(model, "metadata.json")))
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
            raise PackageError(f"{self.path}: metadata of {model!r} is not valid JSON ({e})") from None
        try:
            return validate(meta)
        except PackageError as e:
            raise PackageError(f"{self.path}: model {model!r}: {e}") from None

    def library(self, model: str, meta: dict) -> bytes:
        data = self._read(_entry(model, "model.so"))
        if sha256(data) != meta["sha256"]["model.so"]:
            raise PackageError(f"{self.path}: model.so of {model!r} does not match its sha256 "
                               "digest; the package is corrupt")
        return data

    def weights_location(self, model: str, meta: dict) -> tuple[int, int]:
        """(offset in the archive file, size) of weights.bin's bytes, verified."""
        name = _entry(model, "weights.bin")
        try:
            info = self.zf.getinfo(name)
        except KeyError:
            raise PackageError(f"{self.path} is missing {name}") from None
        if info.compress_type != zipfile.ZIP_STORED:
            raise PackageError(f"{self.path}: {name} is compressed; aotc maps weights uncompressed")
        with open(self.path, "rb") as f:
            f.seek(info.header_offset)
            header = f.read(30)
            if len(header) != 30 or header[:4] != b"PK\x03\x04":
                raise PackageError(f"{self.path}: bad local header for {name}")
            n, e = struct.unpack("<HH", header[26:30])
            offset = info.header_offset + 30 + n + e
            h = hashlib.sha256()
            f.seek(offset)
            remaining = info.file_size
            while remaining:
                chunk = f.read(min(remaining, 1 << 22))
                if not chunk:
                    raise PackageError(f"{self.path}: {name} is truncated")
                h.update(chunk)
                remaining -= len(chunk)
        if h.hexdigest() != meta["sha256"]["weights.bin"]:
            raise PackageError(f"{self.path}: weights.bin of {model!r} does not match its sha256 "
                               "digest; the package is corrupt")
        try:
            check_constants_fit(meta, info.file_size)
        except PackageError as e:
            raise PackageError(f"{self.path}: model {model!r}: {e}") from None
        return offset, info.file_size
