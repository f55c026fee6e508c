"""Packages from another aotc: a package format version other than this one's, or a model
library that speaks another ABI version (a stub exporting only aotc_abi_version)."""
from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

from aotc.package.format import ModelFiles, PackageReader, write_package

# what both loaders say when they refuse a package of another version
OLDER = r"\(the package was written by an older aotc: compile the model again with this one\)"
NEWER = (r"\(the package was written by a newer aotc: compile the model again with this one, "
         r"or load it with the aotc that wrote it\)")


def with_format_version(package: Path, dst: Path, version: int) -> Path:
    """A copy of `package` whose aotc/version entry says `version`."""
    with zipfile.ZipFile(package) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = str(version).encode() if info.filename == "aotc/version" else zin.read(info)
            zout.writestr(info, data)
    return dst


def with_abi_version(package: Path, dst: Path, version: int) -> Path:
    """A copy of `package` whose model.so (digests and CRCs made to match) reports `version`."""
    src = dst.with_suffix(".cpp")
    src.write_text(f'extern "C" int aotc_abi_version(void) {{ return {version}; }}\n')
    lib = dst.with_suffix(".so")
    subprocess.run(["g++", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True,
                   capture_output=True)
    reader = PackageReader(package)
    try:
        meta = reader.metadata("model")
        weights = bytes(reader.weights("model", meta)[0])
    finally:
        reader.close()
    return Path(write_package(dst, {"model": ModelFiles(meta, lib.read_bytes(), "", weights)}))
