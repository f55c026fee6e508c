"""Model state (ABI version 3): the registered buffers a program updates in place
(`self.count.add_(1)`, a KV cache). Each model object owns a copy, initialized from the
package's weights and kept across calls; here Python reads and writes it."""
from __future__ import annotations

import ctypes

import numpy as np

from ..dtypes import DType
from . import abi
from .tensors import is_torch_tensor


def state_table(lib: ctypes.CDLL, constants: list[dict]) -> dict[str, tuple[int, dict]]:
    """State name (its fully-qualified buffer name) -> (its index, its constants entry)."""
    fn = lib.aotc_describe_state
    fn.argtypes = [ctypes.POINTER(abi.i64p), abi.i64p]
    fn.restype = ctypes.c_int
    ptr, n = abi.i64p(), ctypes.c_int64()
    abi.check(lib, fn(ctypes.byref(ptr), ctypes.byref(n)))
    out = {}
    for k in range(n.value):
        entry = constants[ptr[k]]
        out[entry["name"]] = (k, entry)
    return out


def state_array(lib: ctypes.CDLL, handle: int, k: int, entry: dict) -> np.ndarray:
    """The model object's k-th state buffer as a numpy array over its memory (no copy)."""
    fn = lib.aotc_state
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p)]
    fn.restype = ctypes.c_int
    ptr = ctypes.c_void_p()
    abi.check(lib, fn(handle, k, ctypes.byref(ptr)))
    dtype = DType.from_name(entry["dtype"])
    shape = tuple(entry["sizes"])
    if entry["nbytes"] == 0:
        return np.zeros(shape, dtype.numpy_name)
    buf = (ctypes.c_char * entry["nbytes"]).from_address(ptr.value)
    return np.frombuffer(buf, dtype=dtype.numpy_name).reshape(shape)


def as_state_value(value, entry: dict, name: str) -> np.ndarray:
    """A caller's new value for state `name`, as a numpy array of its dtype and shape."""
    from ..errors import InputError

    a = value.detach().cpu().numpy() if is_torch_tensor(value) else np.asarray(value)
    dtype = DType.from_name(entry["dtype"])
    if tuple(a.shape) != tuple(entry["sizes"]):
        raise InputError(f"buffer {name!r}: expected shape {tuple(entry['sizes'])}, got "
                         f"{tuple(a.shape)}")
    if a.dtype != np.dtype(dtype.numpy_name):
        raise InputError(f"buffer {name!r}: expected dtype {dtype.name}, got {a.dtype}")
    return a
