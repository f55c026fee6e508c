"""ctypes view of the C ABI in include/aotc/aotc_abi.h (torch-free)."""
from __future__ import annotations

import ctypes

import numpy as np

from ..errors import InputError, PackageError, RuntimeFailure
from ..package.versions import recompile_advice
from .wait_policy import spin_setting

ABI_VERSION = 8
ERR_INPUT, ERR_MEMORY, ERR_ARGUMENT, ERR_PACKAGE = 1, 2, 3, 5

i64p = ctypes.POINTER(ctypes.c_int64)


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("sizes", i64p), ("strides", i64p),
                ("ndim", ctypes.c_int32), ("dtype", ctypes.c_int32)]


def open_library(path: str) -> ctypes.CDLL:
    try:
        with spin_setting():  # the first model library loads libgomp: its wait policy
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
    except OSError as e:
        raise PackageError(f"cannot load the compiled model {path}: {e}") from None
    try:
        lib.aotc_abi_version.restype = ctypes.c_int
        version = lib.aotc_abi_version()
    except AttributeError:
        raise PackageError(f"{path} is not an aotc model library (no aotc_abi_version)") from None
    if version != ABI_VERSION:
        raise PackageError(f"model library ABI version {version}; this runtime speaks {ABI_VERSION}"
                           + recompile_advice(str(version), ABI_VERSION))
    lib.aotc_create.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int64,
                                ctypes.POINTER(ctypes.c_void_p)]
    lib.aotc_output_shapes.argtypes = [ctypes.c_void_p, ctypes.POINTER(Tensor), ctypes.c_int64, i64p]
    lib.aotc_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(Tensor), ctypes.c_int64,
                             ctypes.POINTER(Tensor), ctypes.c_int64]
    lib.aotc_set_num_threads.argtypes = [ctypes.c_void_p, ctypes.c_int32]
    lib.aotc_pack_constant.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
    lib.aotc_destroy.argtypes = [ctypes.c_void_p]
    lib.aotc_destroy.restype = None
    lib.aotc_last_error.restype = ctypes.c_char_p
    lib.aotc_crc32.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t]
    lib.aotc_crc32.restype = ctypes.c_uint32
    for fn in (lib.aotc_create, lib.aotc_output_shapes, lib.aotc_run, lib.aotc_set_num_threads,
               lib.aotc_pack_constant):
        fn.restype = ctypes.c_int
    return lib


# aotc_run taking plain addresses: a call skips ctypes' conversion of its arguments
_RUN_BY_ADDRESS = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                   ctypes.c_void_p, ctypes.c_int64)


def run_by_address(lib: ctypes.CDLL):
    """lib's aotc_run(model, inputs, n_in, outputs, n_out) with every pointer an int."""
    return _RUN_BY_ADDRESS(("aotc_run", lib))


def crc32_of(lib: ctypes.CDLL):
    """zlib.crc32(buffer) computed by the library's aotc_crc32 (ctypes releases the GIL
    for the call, so chunks are checked on several threads at once)."""
    fn = lib.aotc_crc32

    def crc32(view: memoryview) -> int:
        if not len(view):
            return 0
        return fn(0, np.frombuffer(view, np.uint8).ctypes.data, len(view))

    return crc32


def check(lib: ctypes.CDLL, rc: int) -> None:
    """Raise the typed error for a non-zero ABI status."""
    if rc == 0:
        return
    msg = (lib.aotc_last_error() or b"").decode(errors="replace")
    if rc == ERR_INPUT:
        raise InputError(msg)
    if rc == ERR_MEMORY:
        raise MemoryError(msg)
    if rc == ERR_PACKAGE:
        raise PackageError(msg)
    raise RuntimeFailure(f"compiled model failed (status {rc}): {msg}")
