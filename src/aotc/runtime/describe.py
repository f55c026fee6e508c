"""The model library's description of itself (ABI version 2) read through ctypes: inputs,
outputs, symbols, the constants table and metadata, as plain Python values. The loaders
take these from the library, so metadata.json is only the human-readable copy."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

from ..dtypes import DType
from ..errors import PackageError
from . import abi

_CODE_TO_DTYPE = {d.code: d for d in DType}


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dims", ctypes.POINTER(ctypes.c_char_p)),
                ("sizes", abi.i64p), ("ndim", ctypes.c_int32), ("dtype", ctypes.c_int32)]


class SymbolInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("min", ctypes.c_int64), ("max", ctypes.c_int64)]


class ConstantInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("sizes", abi.i64p), ("ndim", ctypes.c_int32),
                ("dtype", ctypes.c_int32), ("offset", ctypes.c_int64), ("nbytes", ctypes.c_int64)]


@dataclass(frozen=True)
class Description:
    inputs: list[dict]  # {"name", "dtype", "sizes" (int or symbol text)}, as in metadata.json
    outputs: list[dict]
    symbols: dict[str, list]  # name -> [min, max or None]
    constants: list[dict]  # {"name", "dtype", "sizes", "offset", "nbytes"}
    metadata: dict[str, str]


def _table(lib: ctypes.CDLL, fn: str, struct) -> list:
    entry = getattr(lib, fn)
    entry.argtypes = [ctypes.POINTER(ctypes.POINTER(struct)), abi.i64p]
    entry.restype = ctypes.c_int
    ptr, n = ctypes.POINTER(struct)(), ctypes.c_int64()
    abi.check(lib, entry(ctypes.byref(ptr), ctypes.byref(n)))
    return [ptr[k] for k in range(n.value)]


def _dtype(code: int, what: str) -> str:
    if code not in _CODE_TO_DTYPE:
        raise PackageError(f"the model library describes {what} with unknown dtype code {code}")
    return _CODE_TO_DTYPE[code].name


def _tensor(t: TensorInfo) -> dict:
    name = t.name.decode()
    sizes = [t.sizes[d] if t.sizes[d] >= 0 else t.dims[d].decode() for d in range(t.ndim)]
    return {"name": name, "dtype": _dtype(t.dtype, name), "sizes": sizes}


def describe_library(lib: ctypes.CDLL) -> Description:
    inputs = [_tensor(t) for t in _table(lib, "aotc_describe_inputs", TensorInfo)]
    outputs = [_tensor(t) for t in _table(lib, "aotc_describe_outputs", TensorInfo)]
    symbols = {s.name.decode(): [s.min, s.max if s.max >= 0 else None]
               for s in _table(lib, "aotc_describe_symbols", SymbolInfo)}
    constants = []
    for c in _table(lib, "aotc_describe_constants", ConstantInfo):
        name = c.name.decode()
        constants.append({"name": name, "dtype": _dtype(c.dtype, name),
                          "sizes": [c.sizes[d] for d in range(c.ndim)],
                          "offset": c.offset, "nbytes": c.nbytes})
    fn = lib.aotc_describe_metadata
    strings = ctypes.POINTER(ctypes.c_char_p)
    fn.argtypes = [ctypes.POINTER(strings), ctypes.POINTER(strings), abi.i64p]
    fn.restype = ctypes.c_int
    keys, values, n = strings(), strings(), ctypes.c_int64()
    abi.check(lib, fn(ctypes.byref(keys), ctypes.byref(values), ctypes.byref(n)))
    metadata = {keys[k].decode(): values[k].decode() for k in range(n.value)}
    return Description(inputs, outputs, symbols, constants, metadata)
