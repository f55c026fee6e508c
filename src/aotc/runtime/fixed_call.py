"""The short call path of a model with a fixed signature: every input a tensor of static
shape, no state, nothing updated in place. A call that passes exactly the tensors the
model was compiled for (contiguous, on the cpu, of the compiled dtypes and shapes, all
torch or all numpy) only swaps data pointers into a frame filled once, allocates the
outputs and runs; anything else takes the general path, which converts, checks and
reports. The library checks every call either way."""
from __future__ import annotations

import ctypes
import sys

import numpy as np

from ..dtypes import DType
from . import abi
from .tensors import contiguous_strides


def numpy_address(a: np.ndarray) -> int:
    """The data address of a C-contiguous array: through the buffer protocol, several times
    cheaper than `a.ctypes.data`, which serves the read-only and empty arrays it refuses."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    except (TypeError, ValueError):
        return a.ctypes.data


class FixedSignature:
    """The compiled input and output (shape, dtype) pairs, and their torch/numpy spellings."""

    def __init__(self, inputs: list[tuple[tuple, DType]], outputs: list[tuple[tuple, DType]]):
        self.inputs, self.outputs = inputs, outputs
        # resolved on the first call with torch tensors (torch is loaded by then)
        self._tensor: type | None = None
        self._torch: tuple = ()
        # bfloat16 travels in numpy as raw uint16 bits: that goes through the general path
        self._numpy = None if any(d is DType.bfloat16 for _, d in inputs + outputs) else (
            [(s, np.dtype(d.numpy_name)) for s, d in inputs],
            [(s, np.dtype(d.numpy_name)) for s, d in outputs])

    def _resolve_torch(self) -> None:
        torch = sys.modules["torch"]
        # outputs as torch.empty's positional sizes (faster than a tuple; () for a 0-dim one)
        self._torch = (torch.empty, [(s, getattr(torch, d.name)) for s, d in self.inputs],
                       [(s if s else ((),), getattr(torch, d.name)) for s, d in self.outputs])
        self._tensor = torch.Tensor

    def takes(self, args: tuple) -> str | None:
        """'torch' or 'numpy' when args are exactly the compiled tensors, else None."""
        if len(args) != len(self.inputs):
            return None
        first = type(args[0])
        if first is np.ndarray and self._numpy is not None:
            for x, (shape, dt) in zip(args, self._numpy[0]):
                if (type(x) is not np.ndarray or x.dtype != dt or x.shape != shape
                        or not x.flags.c_contiguous):
                    return None
            return "numpy"
        tensor = self._tensor
        if tensor is None:
            if "torch" not in sys.modules:
                return None
            self._resolve_torch()
            tensor = self._tensor
        if first is not tensor:
            return None
        for x, (shape, dt) in zip(args, self._torch[1]):
            if (type(x) is not tensor or x.dtype is not dt or x.shape != shape or not x.is_cpu
                    or not x.is_contiguous()):
                return None
        return "torch"


class FixedFrame:
    """One model object's ctypes structures for the fixed signature, sizes and strides
    filled once: a call writes only the data pointers."""

    def __init__(self, signature: FixedSignature):
        self.ins, self.in_slots, self._in_dims = self._structs(signature.inputs)
        self.outs, self.out_slots, self._out_dims = self._structs(signature.outputs)
        self.addresses = (ctypes.addressof(self.ins), len(signature.inputs),
                          ctypes.addressof(self.outs), len(signature.outputs))

    @staticmethod
    def _structs(tensors: list[tuple[tuple, DType]]):
        array = (abi.Tensor * max(len(tensors), 1))()
        dims = []  # kept alive with the structures that point at them
        for t, (shape, dtype) in zip(array, tensors):
            rank = len(shape)
            sizes = (ctypes.c_int64 * max(rank, 1))(*shape)
            strides = (ctypes.c_int64 * max(rank, 1))(*contiguous_strides(shape))
            dims.append((sizes, strides))
            t.sizes, t.strides, t.ndim, t.dtype = sizes, strides, rank, dtype.code
        return array, [array[k] for k in range(len(tensors))], dims

    def run(self, lib, run, handle: int, signature: FixedSignature, args: tuple,
            kind: str) -> list:
        """Run on args (which `signature.takes` as `kind`) with `run`, the library's
        abi.run_by_address; the new outputs."""
        outs = []
        if kind == "torch":
            empty, _, out_types = signature._torch
            for slot, x in zip(self.in_slots, args):
                slot.data = x.data_ptr()
            for slot, (shape, dt) in zip(self.out_slots, out_types):
                o = empty(*shape, dtype=dt)
                slot.data = o.data_ptr()
                outs.append(o)
        else:
            for slot, x in zip(self.in_slots, args):
                slot.data = numpy_address(x)
            for slot, (shape, dt) in zip(self.out_slots, signature._numpy[1]):  # type: ignore[index]
                o = np.empty(shape, dt)
                slot.data = numpy_address(o)
                outs.append(o)
        ins, n_in, outs_at, n_out = self.addresses
        rc = run(handle, ins, n_in, outs_at, n_out)
        if rc:
            abi.check(lib, rc)
        return outs
