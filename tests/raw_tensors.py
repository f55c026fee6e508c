"""The small raw tensor format of tests/cpp/run_model.cpp: a text line "dtype ndim size..."
(dtype as aotc's DType code), then the bytes."""
from __future__ import annotations

import numpy as np

CODES = {"float32": 0, "float64": 1, "int8": 4, "int32": 6, "int64": 7, "uint8": 8, "bool": 9,
         "complex64": 11, "complex128": 12}
DTYPES = {code: np.dtype(name) for name, code in CODES.items()}


def write_raw(path, array: np.ndarray) -> str:
    header = f"{CODES[array.dtype.name]} {array.ndim} {' '.join(map(str, array.shape))}".rstrip()
    path.write_bytes(header.encode() + b"\n" + np.ascontiguousarray(array).tobytes())
    return str(path)


def read_raw(path) -> np.ndarray:
    header, _, data = path.read_bytes().partition(b"\n")
    code, ndim, *shape = map(int, header.split())
    return np.frombuffer(data, dtype=DTYPES[code]).reshape(shape[:ndim])
