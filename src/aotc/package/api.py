"""`aotc.package`'s spelling of torch._inductor.package: `package_aoti(path, {name:
compiled})` writes the models that `aotc.aot_compile` returned into one .pt2, and
`load_package(path, model_name)` loads one of them. Torch-free."""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import PackageError
from .filelike import is_filelike, staged
from .format import DEFAULT_MODEL, ModelFiles, write_package


@dataclass(frozen=True)
class CompiledArtifact:
    """One compiled model, not yet in a package: what `aot_compile` returns."""

    name: str  # the name it gets in a package when none is given
    files: ModelFiles

    def __repr__(self) -> str:
        return (f"CompiledArtifact({self.name!r}, {len(self.files.library)} bytes of code, "
                f"{len(self.files.weights)} bytes of weights)")


def package_aoti(path, aoti_files) -> str | object:
    """Write compiled models into one .pt2 at `path` (a file name or a writable file-like).

    `aoti_files` is one CompiledArtifact, a list of them (each under its own name) or a dict
    {model name: CompiledArtifact}. Returns `path`."""
    if isinstance(aoti_files, CompiledArtifact):
        models = {aoti_files.name: aoti_files}
    elif isinstance(aoti_files, (list, tuple)):
        models = {a.name: a for a in aoti_files} if all(
            isinstance(a, CompiledArtifact) for a in aoti_files) else {}
        if len(models) != len(aoti_files):
            raise PackageError("package_aoti: a list must hold CompiledArtifacts with distinct "
                               "names; give a dict {name: artifact} to name them")
    elif isinstance(aoti_files, dict):
        models = dict(aoti_files)
    else:
        raise PackageError(f"package_aoti expects what aotc.aot_compile returns (or a dict "
                           f"{{name: it}}), got {type(aoti_files).__name__}")
    for name, art in models.items():
        if not isinstance(art, CompiledArtifact):
            raise PackageError(f"package_aoti: model {name!r} is a {type(art).__name__}; expected "
                               "what aotc.aot_compile returns")
        if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
            raise PackageError(f"package_aoti: model name {name!r} must be letters, digits, '_' "
                               "or '-'")
    files = {name: art.files for name, art in models.items()}
    if is_filelike(path):
        with staged(path) as tmp:
            write_package(tmp, files)
        return path
    path = os.fspath(path)
    if not path.endswith(".pt2"):
        raise PackageError(f"package path must end in .pt2, got {path!r}")
    return write_package(path, files)


def load_package(path, model_name: str | None = None, run_single_threaded: bool = False,
                 num_runners: int = 1, device_index: int = -1, *, num_threads: int | None = None):
    """torch._inductor.package.load_package, argument for argument: model `model_name`
    (default: the only one, or "model") of a package at `path` (a file name or a readable
    file-like). `device_index` must stay -1: aotc packages run on the CPU."""
    from ..runtime.loader import load_package as load

    if device_index != -1:
        raise PackageError(f"device_index={device_index}: aotc packages run on the CPU, which "
                           "has no device index; leave it at -1")
    return load(path, model_name, run_single_threaded, num_threads, num_runners)


__all__ = ["CompiledArtifact", "DEFAULT_MODEL", "load_package", "package_aoti"]
