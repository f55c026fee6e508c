"""Model state (ABI version 4): the registered buffers a program updates in place
(`self.count.add_(1)`, a KV cache). The state belongs to the loaded model, not to one of
its model objects: the loader holds one copy, initialized from the package's weights and
kept across calls (and weight swaps), and shares it with every model object it creates
(`aotc_share_state`); calls of a model with state run one at a time, so each sees the
updates of the calls before it, whichever model object serves it.

Besides that default state a loaded model holds up to `max_states` more, one per sequence
being generated (`CompiledModel.new_state()`, a `ModelState`): each its own copy of every
buffer, weights shared. A call names the state it reads and updates by being made on it
(`state(*args)`); the model object that serves it is pointed at that state's buffers first
(aotc_share_state again, a pointer per buffer), so calls on different states run at once
on different model objects, while calls on one state run one at a time."""
from __future__ import annotations

import ctypes
import itertools
import threading

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


class SharedState:
    """The loaded model's state buffers (64-byte aligned numpy arrays), shared by every
    model object, and the lock that orders the calls and accesses that touch them."""

    _idents = itertools.count()

    def __init__(self, lib: ctypes.CDLL, table: dict[str, tuple[int, dict]], weights):
        self.ident = next(SharedState._idents)  # never reused: a runner records its state's
        self.table = table
        self.lock = threading.Lock()
        self._weights = weights  # the package's bytes: the initial values
        self._raw: dict[str, np.ndarray] = {}
        self.arrays: dict[str, np.ndarray] = {}
        for name, (_, entry) in table.items():
            raw = np.zeros(entry["nbytes"] + 64, np.uint8)
            start = -raw.ctypes.data % 64
            self._raw[name] = raw
            dtype = DType.from_name(entry["dtype"])
            self.arrays[name] = raw[start:start + entry["nbytes"]].view(
                dtype.numpy_name).reshape(tuple(entry["sizes"]))
        self.reset()
        if table:
            share = lib.aotc_share_state
            share.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
            share.restype = ctypes.c_int
        self._lib = lib

    def reset(self) -> None:
        """Every state buffer back to the value the package holds."""
        for name, (_, entry) in self.table.items():
            start = entry["offset"]
            initial = np.asarray(self._weights[start:start + entry["nbytes"]])
            np.copyto(self.arrays[name].reshape(-1).view(np.uint8), initial)

    def share_with(self, handle: int) -> None:
        """Model object `handle` uses this state from now on."""
        for name, (k, _) in self.table.items():
            abi.check(self._lib, self._lib.aotc_share_state(handle, k,
                                                            self.arrays[name].ctypes.data))


def state_array(lib: ctypes.CDLL, handle: int, k: int, entry: dict) -> np.ndarray:
    """Model object `handle`'s k-th state buffer as a numpy array over its memory (no copy;
    the loader's shared memory once it is shared)."""
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


class ModelState:
    """One independent state of a loaded model (its own copy of every state buffer, the
    weights shared): call it as the model, `state(*args, **kwargs)`, to run a call that reads
    and updates this state only. `reset()` puts it back to the package's values, `free()`
    (or leaving a `with` block, or dropping the last reference) gives its place back."""

    def __init__(self, model, shared: SharedState, release):
        self._model = model
        self._shared: SharedState | None = shared
        self._release = release

    def _live(self) -> SharedState:
        if self._shared is None:
            from ..errors import InputError

            raise InputError("this model state was freed; create another with new_state()")
        return self._shared

    def __call__(self, *args, **kwargs):
        return self._model._call(args, kwargs, self._live())

    @property
    def package_metadata(self) -> dict:
        return self._model.package_metadata

    def buffer_names(self) -> list[str]:
        return self._model.buffer_names()

    def get_buffer(self, name: str):
        """A copy of this state's buffer `name`."""
        return self._model._get_buffer(self._live(), name)

    def set_buffer(self, name: str, value) -> None:
        self._model._set_buffer(self._live(), name, value)

    def reset(self) -> None:
        """Every buffer of this state back to the package's value."""
        shared = self._live()
        with shared.lock:
            shared.reset()

    reset_buffers = reset

    def free(self) -> None:
        """Give this state's place back (a call running on it finishes first)."""
        shared, self._shared = self._shared, None
        if shared is not None:
            with shared.lock:
                self._release()

    @property
    def freed(self) -> bool:
        return self._shared is None

    def __enter__(self) -> ModelState:
        return self

    def __exit__(self, *exc) -> None:
        self.free()

    def __del__(self):
        if getattr(self, "_shared", None) is not None:
            self._release()
