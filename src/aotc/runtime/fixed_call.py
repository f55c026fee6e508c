"""The short call path: a model whose inputs are all tensors, with no state, nothing updated
in place and output sizes that follow the input shapes alone. A call that passes exactly
the tensors the model takes (contiguous, on the cpu, of the compiled dtypes, all torch or
all numpy) with input shapes whose output shapes are known (the static shapes, or shapes an
earlier call of a dynamic model ran with) only writes data pointers into a frame whose sizes
and strides were filled for those shapes, allocates the outputs and runs; anything else
takes the general path, which converts, checks, reports, and teaches this path the shapes it
ran with. The library checks every call either way.

Where the runtime's C module (_fastcall.c) was built, a call with the shapes the frame holds
is checked, written and run there; this module's Python does the same where it was not, and
fills the frame when the shapes change."""
from __future__ import annotations

import ctypes
import sys
from typing import NamedTuple

import numpy as np

from ..dtypes import DType
from . import abi
from .tensors import contiguous_strides

try:
    from . import _fastcall as native  # the short path's hot loop in C
except ImportError:  # not built (no C compiler at install): the same path in Python
    native = None  # type: ignore[assignment]

# how many input shapes of a dynamic model the short path keeps (the first ones that ran)
MAX_SHAPES = 16


def numpy_address(a: np.ndarray) -> int:
    """The data address of a C-contiguous array: through the buffer protocol, several times
    cheaper than `a.ctypes.data`, which serves the read-only and empty arrays it refuses."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    except (TypeError, ValueError):
        return a.ctypes.data


class Shapes(NamedTuple):
    """Input shapes and the output shapes they give (immutable: a frame filled for one
    snapshot is refilled only when it is handed another)."""
    inputs: tuple
    outputs: tuple
    torch_sizes: tuple  # the outputs as torch.empty's positional sizes (`((),)` if 0-dim)


def known_shapes(inputs, outputs) -> Shapes:
    ins = tuple(tuple(int(d) for d in s) for s in inputs)
    outs = tuple(tuple(int(d) for d in s) for s in outputs)
    return Shapes(ins, outs, tuple(s if s else ((),) for s in outs))


class FixedSignature:
    """The input and output dtypes, their torch/numpy spellings, and the shapes known: the
    static ones, or (dynamic model) those its general calls ran with."""

    def __init__(self, in_dtypes: list[DType], out_dtypes: list[DType],
                 static: Shapes | None):
        self.in_dtypes, self.out_dtypes = in_dtypes, out_dtypes
        self._static = static
        self._known: dict[tuple, Shapes] = {}
        self._static_taken: dict[str, tuple[str, Shapes]] = {} if static is None else {
            "torch": ("torch", static), "numpy": ("numpy", static)}
        # each input's static shape, checked with its type (None: the shapes looked up)
        self._in_shapes = list(static.inputs) if static else [None] * len(in_dtypes)
        # resolved on the first call with torch tensors (torch is loaded by then)
        self._tensor: type | None = None
        self._torch: tuple = ()
        # bfloat16 travels in numpy as raw uint16 bits: that goes through the general path
        self._numpy = None if DType.bfloat16 in in_dtypes + out_dtypes else (
            list(zip([np.dtype(d.numpy_name) for d in in_dtypes], self._in_shapes)),
            [np.dtype(d.numpy_name) for d in out_dtypes])

    def learn(self, known: Shapes) -> None:
        """Input shapes a general call ran with and the output shapes the library gave."""
        if self._static is None and len(self._known) < MAX_SHAPES:
            self._known.setdefault(known.inputs, known)

    def _resolve_torch(self) -> None:
        torch = sys.modules["torch"]
        self._torch = (torch.empty,
                       list(zip([getattr(torch, d.name) for d in self.in_dtypes], self._in_shapes)),
                       [getattr(torch, d.name) for d in self.out_dtypes])
        self._tensor = torch.Tensor

    def takes(self, args: tuple) -> tuple[str, Shapes] | None:
        """('torch' or 'numpy', the known shapes) when args are exactly tensors the model
        takes, of shapes it knows; else None."""
        if len(args) != len(self.in_dtypes):
            return None
        first = type(args[0])
        if first is np.ndarray and self._numpy is not None:
            for x, (dt, shape) in zip(args, self._numpy[0]):
                if (type(x) is not np.ndarray or x.dtype != dt or not x.flags.c_contiguous
                        or (shape is not None and x.shape != shape)):
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
                        or not x.is_contiguous() or (shape is not None and x.shape != shape)):
                    return None
            kind = "torch"
        if self._static is not None:
            return self._static_taken[kind]
        known = self._known.get(tuple([x.shape for x in args]))  # torch.Size is a tuple
        return None if known is None else (kind, known)


class FixedFrame:
    """One model object's ctypes structures for the short path, sizes and strides filled
    for one Shapes snapshot at a time: a call with the same shapes as the last one writes
    only the data pointers (in C, where the runtime's C module was built)."""

    def __init__(self, signature: FixedSignature, run_address: int, handle: int):
        self.signature = signature
        self.ins = (abi.Tensor * max(len(signature.in_dtypes), 1))()
        self.outs = (abi.Tensor * max(len(signature.out_dtypes), 1))()
        self.in_slots = [self.ins[k] for k in range(len(signature.in_dtypes))]
        self.out_slots = [self.outs[k] for k in range(len(signature.out_dtypes))]
        for slot, dtype in zip(self.in_slots, signature.in_dtypes):
            slot.dtype = dtype.code
        for slot, dtype in zip(self.out_slots, signature.out_dtypes):
            slot.dtype = dtype.code
        self._dims: list = []  # (sizes, strides) per slot, inputs then outputs
        self.current: Shapes | None = None
        self.addresses = (ctypes.addressof(self.ins), len(self.in_slots),
                          ctypes.addressof(self.outs), len(self.out_slots))
        self.native = None if native is None else native.Caller(
            run_address, handle, self.addresses[0], self.addresses[1], self.addresses[2],
            self.addresses[3], (self.ins, self.outs), np.ndarray, np.empty,
            None if signature._numpy is None else tuple(dt for dt, _ in signature._numpy[0]),
            (None,) * len(signature.out_dtypes) if signature._numpy is None
            else tuple(signature._numpy[1]))
        self._native_torch = False  # whether the C caller knows torch's types

    def fill(self, known: Shapes) -> None:
        """Sizes and strides for `known` (a rank never changes: the arrays are made once)."""
        shapes = known.inputs + known.outputs
        if not self._dims:
            for slot, shape in zip(self.in_slots + self.out_slots, shapes):
                rank = len(shape)
                dims = (ctypes.c_int64 * max(rank, 1))(), (ctypes.c_int64 * max(rank, 1))()
                self._dims.append(dims)
                slot.sizes, slot.strides, slot.ndim = dims[0], dims[1], rank
        for (sizes, strides), shape in zip(self._dims, shapes):
            for d, (n, stride) in enumerate(zip(shape, contiguous_strides(shape))):
                sizes[d], strides[d] = n, stride
        self.current = known
        if self.native is not None:
            self.native.set_outputs(known.outputs)

    def call(self, lib, run, handle: int, args: tuple) -> list | None:
        """The outputs of a short-path call on args, or None where args do not take it (the
        caller goes on with the general path). `run` is the library's abi.run_by_address."""
        if self.native is not None:
            outs = self.native(args)
            if type(outs) is list:
                return outs
            if outs is not None:
                abi.check(lib, outs)
        taken = self.signature.takes(args)
        return None if taken is None else self.run(lib, run, handle, args, taken)

    def run(self, lib, run, handle: int, args: tuple, taken: tuple) -> list:
        """Run on args (which `signature.takes` as `taken`) through `run`, the library's
        abi.run_by_address; the new outputs."""
        kind, known = taken
        if known is not self.current:
            self.fill(known)
        signature = self.signature
        if self.native is not None:
            if kind == "torch" and not self._native_torch:
                empty, ins, outs = signature._torch
                self.native.set_torch(signature._tensor, empty, tuple(dt for dt, _ in ins),
                                      tuple(outs))
                self._native_torch = True
            result = self.native(args)
            if type(result) is list:
                return result
            if result is not None:
                abi.check(lib, result)
        _, out_shapes, torch_sizes = known
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
