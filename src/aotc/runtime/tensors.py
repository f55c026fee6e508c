"""Tensors as the C ABI sees them: torch tensors, numpy arrays and DLPack producers in,
torch tensors or numpy arrays out. Torch is only touched when the caller passes torch
tensors (so it is already imported)."""
from __future__ import annotations

import ctypes
import sys

import numpy as np

from ..dtypes import DType
from ..errors import InputError
from . import abi

_DTYPES: dict = {}  # torch.dtype / numpy dtype -> DType, filled on first sight
_CODES = {d: d.code for d in DType}  # the enum property is slow on a hot path


def dtype_of(dt, what: str) -> DType:
    d = _DTYPES.get(dt)
    if d is None:
        name = str(dt).replace("torch.", "")
        try:
            d = DType.from_name(name)
        except ValueError:
            raise InputError(f"{what}: dtype {name} is not supported by aotc") from None
        _DTYPES[dt] = d
    return d


def is_torch_tensor(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def as_input(x, what: str, expected: DType | None = None):
    """(owner kept alive for the call, data pointer, shape, element strides, DType).
    `expected`: the dtype the input was compiled for; a numpy uint16 array is bfloat16's
    raw bits (numpy has no bfloat16: the runtime returns bfloat16 outputs that way) where
    the input is bfloat16, and is refused elsewhere (aotc has no uint16)."""
    if is_torch_tensor(x):
        if x.device.type != "cpu":
            raise InputError(f"{what}: tensor is on {x.device}; this package runs on the cpu")
        if not x.is_contiguous():
            x = x.contiguous()
        return x, x.data_ptr(), x.shape, x.stride(), dtype_of(x.dtype, what)
    if isinstance(x, np.generic):
        x = np.asarray(x)
    elif not isinstance(x, np.ndarray):
        if not hasattr(x, "__dlpack__"):
            raise InputError(f"{what}: expected a tensor or numpy array, got {type(x).__name__}")
        x = np.from_dlpack(x)
    a = x if x.flags.c_contiguous else np.ascontiguousarray(x)  # (which makes 0-dim 1-dim)
    strides = tuple(s // a.itemsize for s in a.strides) if a.itemsize else (0,) * a.ndim
    if a.dtype == _UINT16:
        if expected is not DType.bfloat16:
            raise InputError(f"{what}: a numpy uint16 array stands for bfloat16 (its raw bits, "
                             "as aotc returns bfloat16 outputs to numpy), but this input is "
                             f"{expected.name if expected else 'not bfloat16'}; aotc has no "
                             "uint16 dtype")
        return a, a.ctypes.data, a.shape, strides, DType.bfloat16
    return a, a.ctypes.data, a.shape, strides, dtype_of(a.dtype, what)


_UINT16 = np.dtype(np.uint16)


def empty(shape, dtype: DType, like_torch: bool):
    """(a new contiguous tensor, its data pointer)."""
    if like_torch:
        torch = sys.modules["torch"]
        t = torch.empty(shape, dtype=_TORCH_DTYPES.get(dtype) or _torch_dtype(torch, dtype))
        return t, t.data_ptr()
    a = np.empty(shape, dtype=dtype.numpy_name)
    return a, a.ctypes.data


_TORCH_DTYPES: dict = {}


def _torch_dtype(torch, dtype: DType):
    _TORCH_DTYPES[dtype] = getattr(torch, dtype.name)
    return _TORCH_DTYPES[dtype]


def contiguous_strides(shape) -> list[int]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return strides[::-1]


class Frame:
    """The ctypes structures of one call, allocated once per model object and refilled.

    A model object serves one call at a time, so its frame is never shared. Sizes and
    strides are rewritten only when they change: repeated calls with the same shapes only
    swap data pointers."""

    def __init__(self, in_ranks: list[int], out_ranks: list[int]):
        self.ins = (abi.Tensor * max(len(in_ranks), 1))()
        self.outs = (abi.Tensor * max(len(out_ranks), 1))()
        self.max_rank = max(out_ranks + [1])
        self.out_sizes = (ctypes.c_int64 * (max(len(out_ranks), 1) * self.max_rank))()
        self._in_dims = [self._dims(r) for r in in_ranks]
        self._out_dims = [self._dims(r) for r in out_ranks]
        self._in_layout: list = [None] * len(in_ranks)
        self._out_layout: list = [None] * len(out_ranks)
        self.input_shapes: tuple | None = None  # the shapes output_shapes last ran for
        self.output_shapes: list = []

    @staticmethod
    def _dims(rank: int):
        return (ctypes.c_int64 * max(rank, 1))(), (ctypes.c_int64 * max(rank, 1))()

    @staticmethod
    def _fill(struct, dims, layouts, k: int, ptr: int, shape, strides, code: int):
        t = struct[k]
        t.data = ptr
        layout = (shape, strides, code)
        if layouts[k] == layout:
            return
        n = len(shape)
        sizes, strs = dims[k]
        if n > len(sizes):  # a rank the model does not take: the model reports it
            dims[k] = sizes, strs = Frame._dims(n)
        for d in range(n):
            sizes[d] = shape[d]
            strs[d] = strides[d]
        t.sizes, t.strides, t.ndim, t.dtype = sizes, strs, n, code
        layouts[k] = layout

    def set_input(self, k: int, ptr: int, shape, strides, dtype: DType) -> None:
        self._fill(self.ins, self._in_dims, self._in_layout, k, ptr, tuple(shape),
                   tuple(strides), _CODES[dtype])

    def set_output(self, k: int, ptr: int, shape: tuple, dtype: DType) -> None:
        layout = self._out_layout[k]
        strides = layout[1] if layout and layout[0] == shape else tuple(contiguous_strides(shape))
        self._fill(self.outs, self._out_dims, self._out_layout, k, ptr, shape, strides,
                   _CODES[dtype])

    def output_shape(self, j: int, rank: int) -> tuple:
        base = j * self.max_rank
        return tuple(self.out_sizes[base:base + rank])
