"""The .pt2 package: a zip holding, per model, metadata.json, model.so, model.cpp and
weights.bin. Torch-free, so the runtime can read it with numpy alone.

weights.bin and model.so are stored uncompressed with their data 64-byte aligned inside the
archive, so a loader maps them straight from the .pt2 file without a zip library; each
constant inside weights.bin is 64-byte aligned too. An entry over 1 GB is written with zip64
headers (and an archive past 2 GB gets zip64 offsets), which both loaders read. Loading
checks their chunked CRC-32s (checksum.py); their sha256 digests are checked by
`verify_digests` (`aotc inspect --verify`).
"""
from __future__ import annotations

import hashlib
import json
import mmap
import os
import struct
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import PackageError
from .checksum import CHUNK_BYTES, chunk_count, chunk_crcs, first_bad_chunk
from .schema import FORMAT_VERSION, check_constants_fit, validate
from .versions import recompile_advice

ARCHIVE_FORMAT = "pt2"
DEFAULT_MODEL = "model"
ALIGN = 64
_PAD_EXTRA_ID = 0xD935  # the zip extra field id used for alignment padding
_ZIP64_EXTRA = 20  # the zip64 field a local header carries: id, length, two 8-byte sizes
# entries from this size on get zip64 local headers (zipfile's own rule, size * 1.05 over
# 2 GiB - 1, always lies above it, so the choice is ours and the padding can count it)
ZIP64_ENTRY_BYTES = 1 << 30


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


def _write(zf: zipfile.ZipFile, name: str, data: bytes | str, *, aligned: bool = False,
           compress: int = zipfile.ZIP_STORED, zip64: bool = False) -> None:
    """One entry; `aligned`: stored, its data starting at a multiple of ALIGN in the file
    (padding in an extra field of the local header, counting the zip64 field that follows
    it there). `zip64` forces zip64 headers on an entry of any size."""
    data = data.encode() if isinstance(data, str) else data
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED if aligned else compress
    info.file_size = len(data)
    zip64 = zip64 or len(data) >= ZIP64_ENTRY_BYTES
    if aligned:
        header_end = zf.start_dir + 30 + len(name.encode()) + 4 + (_ZIP64_EXTRA if zip64 else 0)
        pad = (-header_end) % ALIGN
        info.extra = struct.pack("<HH", _PAD_EXTRA_ID, pad) + b"\0" * pad
    with zf.open(info, "w", force_zip64=zip64) as f:
        f.write(data)
    if aligned and (info.header_offset + len(info.FileHeader(zip64))) % ALIGN:
        raise PackageError(f"{name} was written unaligned in the archive; the zip writer's "
                           "local header is not the one aotc expects")


def write_package(path: str | os.PathLike, models: dict[str, ModelFiles], *,
                  zip64: bool = False) -> str:
    """Write the archive atomically; refuses to replace anything but an older .pt2.
    `zip64` writes every entry with zip64 headers, as entries over 1 GB always are."""
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
            _write(zf, "archive_format", ARCHIVE_FORMAT, zip64=zip64)
            _write(zf, "aotc/version", str(FORMAT_VERSION), zip64=zip64)
            for name, files in models.items():
                meta = dict(files.metadata)
                meta["sha256"] = {"model.so": sha256(files.library),
                                  "weights.bin": sha256(files.weights)}
                meta["crc32"] = {"chunk_bytes": CHUNK_BYTES,
                                 "model.so": chunk_crcs(files.library),
                                 "weights.bin": chunk_crcs(files.weights)}
                _write(zf, _entry(name, "metadata.json"), json.dumps(meta, indent=1), zip64=zip64)
                _write(zf, _entry(name, "model.cpp"), files.source,
                       compress=zipfile.ZIP_DEFLATED, zip64=zip64)
                _write(zf, _entry(name, "model.so"), files.library, aligned=True, zip64=zip64)
                _write(zf, _entry(name, "weights.bin"), files.weights, aligned=True, zip64=zip64)
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
    """Reads and verifies one model of a package; large entries are read from a read-only
    mapping of the file, without a copy."""

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        if not os.path.isfile(self.path):
            raise PackageError(f"package {self.path} does not exist")
        try:
            self.zf = zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, OSError) as e:
            raise PackageError(f"{self.path} is not a valid .pt2 package: {e}") from None
        self._map: mmap.mmap | None = None
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
                               f"version {FORMAT_VERSION}"
                               + recompile_advice(version, FORMAT_VERSION))
        self.models = sorted({n.split("/")[1] for n in names
                              if n.startswith("aotc/") and n.count("/") == 2})

    def close(self) -> None:
        """Closes the zip; the mapping lives on while arrays over it do."""
        self.zf.close()
        self._map = None

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

    def _span(self, model: str, file: str) -> tuple[memoryview, int]:
        """The bytes of a stored entry, over the file's mapping, and their offset in it."""
        name = _entry(model, file)
        try:
            info = self.zf.getinfo(name)
        except KeyError:
            raise PackageError(f"{self.path} is missing {name}") from None
        if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
            raise PackageError(f"{self.path}: {name} is compressed; aotc maps it uncompressed "
                               "(write the package with aotc)")
        if self._map is None:
            with open(self.path, "rb") as f:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        header = self._map[info.header_offset:info.header_offset + 30]
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise PackageError(f"{self.path}: bad local header for {name}")
        n, e = struct.unpack("<HH", header[26:30])
        offset = info.header_offset + 30 + n + e
        if offset + info.file_size > len(self._map):
            raise PackageError(f"{self.path}: {name} is truncated")
        return memoryview(self._map)[offset:offset + info.file_size], offset

    def _checked(self, model: str, meta: dict, file: str, crc32=zlib.crc32) -> tuple[memoryview, int]:
        data, offset = self._span(model, file)
        sums, chunk = meta["crc32"][file], meta["crc32"]["chunk_bytes"]
        if len(sums) != 8 * chunk_count(len(data), chunk):
            raise PackageError(f"{self.path}: metadata field 'crc32.{file}' holds {len(sums) // 8} "
                               f"checksums; {file} of {model!r} ({len(data)} bytes) has "
                               f"{chunk_count(len(data), chunk)} chunks of {chunk} bytes")
        bad = first_bad_chunk(data, sums, chunk, crc32)
        if bad is not None:
            end = min((bad + 1) * chunk, len(data))
            raise PackageError(f"{self.path}: {file} of {model!r} does not match its CRC-32 (bytes "
                               f"{bad * chunk}..{end} are damaged); the package is corrupt")
        return data, offset

    def library(self, model: str, meta: dict) -> bytes:
        """model.so, verified: its CRC-32s, and its sha256 (which names it in the cache)."""
        data = bytes(self._checked(model, meta, "model.so")[0])
        if sha256(data) != meta["sha256"]["model.so"]:
            raise PackageError(f"{self.path}: model.so of {model!r} does not match its sha256 "
                               "digest; the package is corrupt")
        return data

    def weights(self, model: str, meta: dict, crc32=zlib.crc32) -> tuple[memoryview, int]:
        """weights.bin over the file's read-only mapping (no copy), verified (by `crc32`:
        the model library's, once loaded), and its offset in the archive (64-byte aligned
        in packages aotc writes)."""
        data, offset = self._checked(model, meta, "weights.bin", crc32)
        try:
            check_constants_fit(meta, len(data))
        except PackageError as e:
            raise PackageError(f"{self.path}: model {model!r}: {e}") from None
        return data, offset

    def verify_digests(self, model: str, meta: dict) -> None:
        """The full check: the sha256 of model.so and weights.bin (PackageError if either
        differs from the digest metadata.json records)."""
        for file in ("model.so", "weights.bin"):
            data, _ = self._span(model, file)
            if hashlib.sha256(data).hexdigest() != meta["sha256"][file]:
                raise PackageError(f"{self.path}: {file} of {model!r} does not match its sha256 "
                                   "digest; the package is corrupt")
