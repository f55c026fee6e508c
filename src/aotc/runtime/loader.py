"""Load a .pt2 package and run it: numpy and ctypes only (torch is used only if the caller
passes torch tensors, in which case it is already imported).

No compiler runs here: the package's model.so is extracted (by digest) and loaded.
"""
from __future__ import annotations

import ctypes
import os
import sys
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..build.toolchain import cache_dir, missing_features
from ..dtypes import DType
from ..errors import InputError, PackageError
from ..package.format import PackageReader
from . import abi, pytree


def _materialize_library(data: bytes, digest: str) -> str:
    """The package's model.so as a file dlopen can load, written once per digest (in the
    cache, or the temp directory where the cache is not writable)."""
    for folder in (cache_dir() / "libraries",
                   Path(tempfile.gettempdir()) / f"aotc-{os.getuid()}" / "libraries"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{digest}.so"
            if not path.exists():
                fd, tmp = tempfile.mkstemp(dir=folder, suffix=".so")
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            return str(path)
        except OSError as e:
            error = e
    raise PackageError(f"cannot write the model library anywhere to load it: {error}")


def _is_torch_tensor(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


class _Arg:
    """One tensor argument as the ABI sees it, keeping its memory alive."""

    __slots__ = ("owner", "struct", "_sizes", "_strides")

    def __init__(self, owner, ptr: int, shape, strides, dtype: DType):
        self.owner = owner
        n = len(shape)
        self._sizes = (ctypes.c_int64 * max(n, 1))(*shape)
        self._strides = (ctypes.c_int64 * max(n, 1))(*strides)
        self.struct = abi.Tensor(ptr, self._sizes, self._strides, n, dtype.code)


def _dtype_of(name: str, what: str) -> DType:
    try:
        return DType.from_name(name)
    except ValueError:
        raise InputError(f"{what}: dtype {name} is not supported by aotc") from None


def as_arg(x, what: str) -> _Arg:
    if _is_torch_tensor(x):
        if x.device.type != "cpu":
            raise InputError(f"{what}: tensor is on {x.device}; this package runs on the cpu")
        t = x.detach().contiguous()
        return _Arg(t, t.data_ptr(), tuple(t.shape), t.stride(), _dtype_of(str(t.dtype), what))
    if isinstance(x, np.generic):
        x = np.asarray(x)
    elif not isinstance(x, np.ndarray):
        if not hasattr(x, "__dlpack__"):
            raise InputError(f"{what}: expected a tensor or numpy array, got {type(x).__name__}")
        x = np.from_dlpack(x)
    a = np.ascontiguousarray(x)
    strides = tuple(s // a.itemsize for s in a.strides) if a.itemsize else (0,) * a.ndim
    return _Arg(a, a.ctypes.data, a.shape, strides, _dtype_of(a.dtype.name, what))


def _empty(shape, dtype: DType, like_torch: bool):
    if like_torch:
        torch = sys.modules["torch"]
        t = torch.empty(tuple(shape), dtype=getattr(torch, dtype.name))
        return t, t.data_ptr()
    a = np.empty(tuple(shape), dtype=dtype.numpy_name)
    return a, a.ctypes.data


class CompiledModel:
    """A callable compiled model: model(*args, **kwargs) -> outputs in the exported structure."""

    def __init__(self, path: str, model_name: str | None = None, run_single_threaded: bool = False,
                 num_threads: int | None = None):
        reader = PackageReader(path)
        try:
            self.name = reader.resolve(model_name)
            self.metadata = reader.metadata(self.name)
            library = reader.library(self.name, self.metadata)
            w_offset, w_size = reader.weights_location(self.name, self.metadata)
        finally:
            reader.close()
        self.path = path
        _check_target(path, self.metadata)
        self._lib = abi.open_library(
            _materialize_library(library, self.metadata["sha256"]["model.so"]))
        self._weights = (np.memmap(path, dtype=np.uint8, mode="r", offset=w_offset, shape=(w_size,))
                         if w_size else np.zeros(0, np.uint8))
        self._constants = self._constant_pointers(w_size)
        self._outputs = [(_dtype_of(o["dtype"], "output"), len(o["sizes"]))
                         for o in self.metadata["outputs"]]
        self._max_rank = max([r for _, r in self._outputs] + [1])
        threads = self.metadata.get("num_threads", 0) if num_threads is None else num_threads
        self._num_threads = int(threads or 0)
        self._single = run_single_threaded
        self._lock = threading.Lock()
        self._free: list[int] = []
        self._all: list[int] = []
        self._free.append(self._new_handle())

    def _constant_pointers(self, w_size: int):
        table = self.metadata["constants"]
        base = self._weights.ctypes.data if w_size else 0
        ptrs = (ctypes.c_void_p * max(len(table), 1))()
        for k, c in enumerate(table):
            if c["offset"] + c["nbytes"] > w_size or c["offset"] % 64:
                raise PackageError(f"{self.path}: constant {c['name']} lies outside weights.bin")
            ptrs[k] = base + c["offset"]
        return ptrs

    def _new_handle(self) -> int:
        h = ctypes.c_void_p()
        abi.check(self._lib, self._lib.aotc_create(self._constants, len(self.metadata["constants"]),
                                                   ctypes.byref(h)))
        if self._num_threads:
            abi.check(self._lib, self._lib.aotc_set_num_threads(h, self._num_threads))
        self._all.append(h.value)
        return h.value

    @contextmanager
    def _handle(self):
        if self._single:  # the caller promised one thread at a time: no lock
            yield self._free[0]
            return
        with self._lock:
            h = self._free.pop() if self._free else None
        if h is None:
            h = self._new_handle()
        try:
            yield h
        finally:
            with self._lock:
                self._free.append(h)

    def __call__(self, *args, **kwargs):
        leaves = pytree.flatten_call(self.metadata["in_spec"], args, kwargs)
        specs = self.metadata["inputs"]
        if len(leaves) != len(specs):
            raise InputError(f"expected {len(specs)} inputs, got {len(leaves)}")
        tensor_args, any_torch = [], False
        for leaf, spec in zip(leaves, specs):
            if spec["kind"] == "scalar":
                if leaf != spec["value"]:
                    raise InputError(f"input '{spec['name']}': the model was compiled for the "
                                     f"constant {spec['value']!r}, got {leaf!r}")
                continue
            any_torch = any_torch or _is_torch_tensor(leaf)
            tensor_args.append(as_arg(leaf, f"input '{spec['name']}'"))
        n_in, n_out = len(tensor_args), len(self._outputs)
        ins = (abi.Tensor * max(n_in, 1))(*(a.struct for a in tensor_args))
        sizes = (ctypes.c_int64 * (max(n_out, 1) * self._max_rank))()
        with self._handle() as h:
            abi.check(self._lib, self._lib.aotc_output_shapes(h, ins, n_in, sizes))
            outs, out_args = [], []
            for j, (dtype, rank) in enumerate(self._outputs):
                shape = sizes[j * self._max_rank: j * self._max_rank + rank]
                obj, ptr = _empty(shape, dtype, any_torch)
                outs.append(obj)
                out_args.append(_Arg(obj, ptr, shape, _contiguous(shape), dtype))
            out_structs = (abi.Tensor * max(n_out, 1))(*(a.struct for a in out_args))
            abi.check(self._lib, self._lib.aotc_run(h, ins, n_in, out_structs, n_out))
        leaves = [outs[leaf["index"]] if leaf["kind"] == "tensor" else leaf["value"]
                  for leaf in self.metadata["output_leaves"]]
        return pytree.unflatten(self.metadata["out_spec"], leaves)

    def __del__(self):
        lib = getattr(self, "_lib", None)
        for h in getattr(self, "_all", []):
            if lib is not None:
                lib.aotc_destroy(h)

    def __repr__(self) -> str:
        return f"CompiledModel({self.path!r}, model={self.name!r})"


def _check_target(path: str, meta: dict) -> None:
    target = meta.get("target", {})
    if target.get("device") != "cpu":
        raise PackageError(f"{path} was compiled for device {target.get('device')!r}; this "
                           "runtime runs cpu packages")
    missing = missing_features(target.get("arch", ""))
    if missing:
        raise PackageError(f"{path} was compiled for {target.get('arch')} ({target.get('isa')}); "
                           f"this CPU lacks {sorted(missing)}. Recompile with "
                           "options={'isa': 'avx2'} (or 'sse2') for older machines")


def _contiguous(shape) -> list[int]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return strides[::-1]


def load_package(path, model_name: str | None = None, run_single_threaded: bool = False,
                 num_threads: int | None = None) -> CompiledModel:
    """Load model `model_name` (default: the only one, or "model") of a .pt2 package."""
    return CompiledModel(os.fspath(path), model_name, run_single_threaded, num_threads)


def aoti_load_package(path, run_single_threaded: bool = False) -> CompiledModel:
    """torch._inductor.aoti_load_package's spelling."""
    return load_package(path, run_single_threaded=run_single_threaded)
