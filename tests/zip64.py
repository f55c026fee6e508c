"""zip64 on a small package: `write_package(..., zip64=True)` gives every local header its
zip64 sizes, and `with_zip64_directory` rewrites the central directory as an archive past
4 GB has it (every size and offset in a zip64 extra field, a zip64 end record and locator),
so both loaders' zip64 paths run without writing 4 GB."""
from __future__ import annotations

import struct
from pathlib import Path

_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")  # 46 bytes, then name, extra, comment
_END = struct.Struct("<IHHHHIIH")  # 22 bytes


def with_zip64_directory(package: Path, dst: Path) -> Path:
    """A copy of `package` whose directory entries and end record use zip64 for every
    size, offset and count (the entries' bytes and local headers unchanged)."""
    data = package.read_bytes()
    end = data.rindex(b"PK\x05\x06")
    _, _, _, _, count, dir_size, dir_offset, _ = _END.unpack_from(data, end)
    assert dir_offset != 0xFFFFFFFF, "the package already has a zip64 directory"
    entries, pos = [], dir_offset
    for _ in range(count):
        fields = list(_CENTRAL.unpack_from(data, pos))
        name_len, extra_len, comment_len = fields[10], fields[11], fields[12]
        start = pos + _CENTRAL.size
        name = data[start:start + name_len]
        extra = data[start + name_len:start + name_len + extra_len]
        comment = data[start + name_len + extra_len:start + name_len + extra_len + comment_len]
        # uncompressed size, compressed size, header offset: the zip64 field's order
        zip64 = struct.pack("<HHQQQ", 1, 24, fields[9], fields[8], fields[16])
        fields[8] = fields[9] = fields[16] = 0xFFFFFFFF
        fields[11] = len(zip64) + len(extra)
        entries.append(_CENTRAL.pack(*fields) + name + zip64 + extra + comment)
        pos = start + name_len + extra_len + comment_len
    directory = b"".join(entries)
    end64_at = dir_offset + len(directory)
    end64 = struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count,
                        len(directory), dir_offset)
    locator = struct.pack("<IIQI", 0x07064B50, 0, end64_at, 1)
    end_record = _END.pack(0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    dst.write_bytes(data[:dir_offset] + directory + end64 + locator + end_record)
    return dst


def rewritten(package: Path, dst: Path, zip64: bool = True) -> Path:
    """`package` written again by aotc's writer (every model), with `zip64` headers."""
    from aotc.package.format import ModelFiles, PackageReader, write_package

    reader = PackageReader(package)
    try:
        models = {}
        for name in reader.models:
            meta = reader.metadata(name)
            source = reader.zf.read(f"aotc/{name}/model.cpp").decode()
            models[name] = ModelFiles(meta, reader.library(name, meta), source,
                                      bytes(reader.weights(name, meta)[0]))
    finally:
        reader.close()
    return Path(write_package(dst, models, zip64=zip64))
