"""The short path's C caller (aotc.runtime._fastcall) on its own, with a stand-in for the
model library's aotc_run (a ctypes callback that adds one to its input): what it takes, what
it leaves to the Python path untouched, the library's status, and references."""
from __future__ import annotations

import ctypes
import sys

import numpy as np
import pytest
import torch

from aotc.dtypes import DType
from aotc.runtime import abi
from aotc.runtime.fixed_call import FixedFrame, FixedSignature, known_shapes, native

RUN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(abi.Tensor), ctypes.c_int64,
                       ctypes.POINTER(abi.Tensor), ctypes.c_int64)


def test_the_c_module_is_built():
    assert native is not None, "the runtime's C module (_fastcall) was not built by the install"


class Library:
    """aotc_run's stand-in: out[0] = in[0] + 1 over float32, returning `status`; records
    what each call saw."""

    def __init__(self):
        self.status = 0
        self.seen: list = []
        self.fn = RUN(self._run)
        self.address = ctypes.cast(self.fn, ctypes.c_void_p).value

    def _run(self, model, ins, n_in, outs, n_out):
        t, o = ins[0], outs[0]
        shape = tuple(t.sizes[d] for d in range(t.ndim))
        self.seen.append((model, n_in, n_out, t.data, shape, o.data))
        n = int(np.prod(shape))
        src = np.ctypeslib.as_array(ctypes.cast(t.data, ctypes.POINTER(ctypes.c_float)), (n,))
        dst = np.ctypeslib.as_array(ctypes.cast(o.data, ctypes.POINTER(ctypes.c_float)), (n,))
        dst[:] = src + 1
        return self.status


@pytest.fixture
def frame():
    lib = Library()
    sig = FixedSignature([DType.float32], [DType.float32],
                         known_shapes([(3, 4)], [(3, 4)]))
    f = FixedFrame(sig, lib.address, 1234)
    f.fill(sig._static)
    f.lib = lib  # kept alive with the frame
    return f


def test_numpy_arrays_of_the_frame_s_shapes_run(frame):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = frame.native((x,))
    assert type(out) is list and len(out) == 1
    assert type(out[0]) is np.ndarray and out[0].dtype == np.float32 and out[0].shape == (3, 4)
    np.testing.assert_array_equal(out[0], x + 1)
    model, n_in, n_out, data, shape, out_data = frame.lib.seen[-1]
    assert (model, n_in, n_out, data, shape) == (1234, 1, 1, x.ctypes.data, (3, 4))
    assert out_data == out[0].ctypes.data
    x.setflags(write=False)  # read-only arrays are taken too
    np.testing.assert_array_equal(frame.native((x,))[0], x + 1)


def _not_taken(frame, args) -> None:
    before = (frame.ins[0].data, frame.outs[0].data, len(frame.lib.seen))
    assert frame.native(args) is None
    assert (frame.ins[0].data, frame.outs[0].data, len(frame.lib.seen)) == before


class Sub(np.ndarray):
    pass


@pytest.mark.parametrize("case", ["float64", "shape", "rank", "strided", "subclass", "count",
                                  "mixed", "list", "big-endian", "torch-unknown"])
def test_other_arguments_are_left_to_the_python_path(frame, case):
    frame.native((np.zeros((3, 4), np.float32),))  # the frame holds real pointers
    x = np.ones((3, 4), np.float32)
    args = {"float64": (x.astype(np.float64),), "shape": (np.ones((4, 4), np.float32),),
            "rank": (np.ones((12,), np.float32),), "strided": (np.ones((4, 3), np.float32).T,),
            "subclass": (x.view(Sub),), "count": (x, x), "mixed": (x, torch.ones(3, 4)),
            "list": ([[1.0] * 4] * 3,), "big-endian": (x.astype(">f4"),),
            "torch-unknown": (torch.ones(3, 4),)}[case]
    _not_taken(frame, args)


def test_torch_tensors_once_torch_is_known(frame):
    frame.native.set_torch(torch.Tensor, torch.empty, (torch.float32,), (torch.float32,))
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    out = frame.native((x,))
    assert type(out[0]) is torch.Tensor and out[0].dtype == torch.float32
    torch.testing.assert_close(out[0], x + 1, rtol=0, atol=0)
    assert frame.lib.seen[-1][3] == x.data_ptr()
    big = torch.arange(20, dtype=torch.float32).reshape(5, 4)  # a view at an offset
    torch.testing.assert_close(frame.native((big[2:],))[0], big[2:] + 1, rtol=0, atol=0)
    for other in (x.double(), x.t().contiguous().t(), torch.nn.Parameter(x), x[:, :3],
                  torch.ones(3, 4).t()):
        _not_taken(frame, (other,))


def test_a_failing_run_returns_the_library_status(frame):
    frame.lib.status = 3
    assert frame.native((np.zeros((3, 4), np.float32),)) == 3


def test_no_references_leak(frame):
    x = np.zeros((3, 4), np.float32)
    dtype = np.dtype(np.float32)
    frame.native((x,))
    counts = sys.getrefcount(x), sys.getrefcount(dtype)
    for _ in range(1000):
        frame.native((x,))
        frame.native((x.astype(np.float64),))
    assert (sys.getrefcount(x), sys.getrefcount(dtype)) == counts


def test_bad_construction_is_a_type_error():
    with pytest.raises(TypeError):
        native.Caller(1, 1, 1, 1, 1, 1, None, np.ndarray, np.empty, None, (None, None))
    with pytest.raises(ValueError, match="null address"):
        native.Caller(None, 1, 1, 1, 1, 1, None, np.ndarray, np.empty, None, (None,))
