"""The short call path of a model with a fixed signature: every input a tensor of static
shape, no state, nothing updated in place. A call that passes exactly the tensors the
model was compiled for (contiguous, on the cpu, of the compiled dtypes and shapes, all
torch or all numpy) only writes data pointers into a frame whose sizes and strides were
filled once, allocates the outputs and runs; anything else takes the general path, which
converts, checks and reports. The library checks every call either way."""
from __future__ import annotations

import ctypes
import sys
from typing import NamedTuple

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


class Shapes(NamedTuple):
    """The static input shapes and the output shapes they give."""
    inputs: tuple
    outputs: tuple
    torch_sizes: tuple  # the outputs as torch.empty's positional sizes (`((),)` if 0-dim)


def known_shapes(inputs, outputs) -> Shapes:
    ins = tuple(tuple(int(d) for d in s) for s in inputs)
    outs = tuple(tuple(int(d) for d in s) for s in outputs)
    return Shapes(ins, outs, tuple(s if s else ((),) for s in outs))


class FixedSignature:
    """The input and output dtypes and shapes, and their torch/numpy spellings."""

    def __init__(self, in_dtypes: list[DType], out_dtypes: list[DType], static: Shapes):
        self.in_dtypes, self.out_dtypes = in_dtypes, out_dtypes
        self.shapes = static
        self._in_shapes = list(static.inputs)
        # resolved on the first call with torch tensors (torch is loaded by then)
        self._tensor: type | None = None
        self._torch: tuple = ()
        # bfloat16 travels in numpy as raw uint16 bits: that goes through the general path
        self._numpy = None if DType.bfloat16 in in_dtypes + out_dtypes else (
            list(zip([np.dtype(d.numpy_name) for d in in_dtypes], self._in_shapes)),
            [np.dtype(d.numpy_name) for d in out_dtypes])

    def _resolve_torch(self) -> None:
        torch = sys.modules["torch"]
        self._torch = (torch.empty,
                       list(zip([getattr(torch, d.name) for d in self.in_dtypes], self._in_shapes)),
                       [getattr(torch, d.name) for d in self.out_dtypes])
        self._tensor = torch.Tensor

    def takes(self, args: tuple) -> str | None:
        """'torch' or 'numpy' when args are exactly the compiled tensors, else None."""
        if len(args) != len(self.in_dtypes):
            return None
        first = type(args[0])
        if first is np.ndarray and self._numpy is not None:
            for x, (dt, shape) in zip(args, self._numpy[0]):
                if (type(x) is not np.ndarray or x.dtype != dt or not x.flags.c_contiguous
                        or x.shape != shape):
                    return None
            kind = "numpy"
        else:
            tensor = self._tensor
            if tensor is None:
                if "torch" not in sys.modules:
                    return None
                self._resolve_torch()
                tensor = self._tensor
            if first is not tensor:
                return None
            for x, (dt, shape) in zip(args, self._torch[1]):
                if (type(x) is not tensor or x.dtype is not dt or not x.is_cpu
                        or not x.is_contiguous() or x.shape != shape):
                    return None
            kind = "torch"
        return kind


class FixedFrame:
    """One model object's ctypes structures for the short path, sizes and strides filled
    once: a call writes only the data pointers."""

    def __init__(self, signature: FixedSignature):
        self.ins = (abi.Tensor * max(len(signature.in_dtypes), 1))()
        self.outs = (abi.Tensor * max(len(signature.out_dtypes), 1))()
        self.in_slots = [self.ins[k] for k in range(len(signature.in_dtypes))]
        self.out_slots = [self.outs[k] for k in range(len(signature.out_dtypes))]
        for slot, dtype in zip(self.in_slots, signature.in_dtypes):
            slot.dtype = dtype.code
        for slot, dtype in zip(self.out_slots, signature.out_dtypes):
            slot.dtype = dtype.code
        self._dims = []  # kept alive with the structures that point at them
        known = signature.shapes
        for slots, tensors in ((self.in_slots, known.inputs), (self.out_slots, known.outputs)):
            for slot, shape in zip(slots, tensors):
                rank = len(shape)
                sizes = (ctypes.c_int64 * max(rank, 1))(*shape)
                strides = (ctypes.c_int64 * max(rank, 1))(*contiguous_strides(shape))
                self._dims.append((sizes, strides))
                slot.sizes, slot.strides, slot.ndim = sizes, strides, rank
        self.addresses = (ctypes.addressof(self.ins), len(self.in_slots),
                          ctypes.addressof(self.outs), len(self.out_slots))

    def run(self, lib, run, handle: int, signature: FixedSignature, args: tuple,
            kind: str) -> list:
        """Run on args (which `signature.takes` as `kind`) through `run`, the library's
        abi.run_by_address; the new outputs."""
        _, out_shapes, torch_sizes = signature.shapes
        outs = []
        if kind == "torch":
            empty, _, out_types = signature._torch
            for slot, x in zip(self.in_slots, args):
                slot.data = x.data_ptr()
            for slot, sizes, dt in zip(self.out_slots, torch_sizes, out_types):
                o = empty(*sizes, dtype=dt)
                slot.data = o.data_ptr()
                outs.append(o)
        else:
            for slot, x in zip(self.in_slots, args):
                slot.data = numpy_address(x)
            for slot, shape, dt in zip(self.out_slots, out_shapes,
                                       signature._numpy[1]):  # type: ignore[index]
                o = np.empty(shape, dt)
                slot.data = numpy_address(o)
                outs.append(o)
        ins, n_in, outs_at, n_out = self.addresses
        rc = run(handle, ins, n_in, outs_at, n_out)
        if rc:
            abi.check(lib, rc)
        return outs
