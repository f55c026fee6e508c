"""The C ABI of model.so refuses bad calls with status codes, never a crash."""
from __future__ import annotations

import ctypes
import re
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

import aotc
from aotc.runtime import abi
from models import ReadmeModel


@pytest.fixture(scope="module")
def lib_and_model(tmp_path_factory):
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(2, 10),))
    path = aotc.compile_and_package(ep, package_path=tmp_path_factory.mktemp("abi") / "m.pt2")
    model = aotc.load_package(path)
    return model._lib, model


def _status(lib, rc):
    return rc, (lib.aotc_last_error() or b"").decode()


def test_abi_version(lib_and_model):
    lib, _ = lib_and_model
    assert lib.aotc_abi_version() == abi.ABI_VERSION


def test_every_declared_function_is_exported(lib_and_model):
    """The converse of the header's compile-time check (each function it defines is declared
    by aotc_abi.h): each function aotc_abi.h declares is in the model library."""
    lib, _ = lib_and_model
    header = Path(aotc.__file__).parent / "include" / "aotc" / "aotc_abi.h"
    declared = re.findall(r"^(?:int|void|uint32_t|const char \*)\s*(aotc_\w+)\(",
                          header.read_text(), re.M)
    assert len(declared) == 20  # every one up to version 8 (which added dtype codes only)
    assert [name for name in declared if not hasattr(lib, name)] == []


@pytest.mark.parametrize("size", [0, 1, 15, 63, 64, 65, 255, 256, 257, 4095, (4 << 20) + 3])
def test_library_crc32_is_zlibs(lib_and_model, size):
    """aotc_crc32 (the weights check of the Python loader) equals zlib.crc32 at every length
    its folding paths split at, and continues a CRC as zlib does."""
    lib, _ = lib_and_model
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    crc = abi.crc32_of(lib)
    assert crc(memoryview(data)) == zlib.crc32(data)
    head = zlib.crc32(data[:size // 3])
    tail = lib.aotc_crc32(head, ctypes.c_char_p(data[size // 3:]), size - size // 3)
    assert tail == zlib.crc32(data)


def test_create_rejects_bad_constants(lib_and_model):
    lib, model = lib_and_model
    h = ctypes.c_void_p()
    rc, msg = _status(lib, lib.aotc_create(model._constants, 3, ctypes.byref(h)))
    assert rc == abi.ERR_ARGUMENT and "expected 4 constants, got 3" in msg and not h.value
    nulls = (ctypes.c_void_p * 4)()
    rc, msg = _status(lib, lib.aotc_create(nulls, 4, ctypes.byref(h)))
    assert rc == abi.ERR_ARGUMENT and "constant 0 is null" in msg
    rc, _ = _status(lib, lib.aotc_create(model._constants, 4, None))
    assert rc == abi.ERR_ARGUMENT


def test_run_rejects_null_and_mismatched_arguments(lib_and_model):
    lib, model = lib_and_model
    h = ctypes.c_void_p()
    assert lib.aotc_create(model._constants, 4, ctypes.byref(h)) == 0
    try:
        rc, msg = _status(lib, lib.aotc_run(None, None, 0, None, 0))
        assert rc == abi.ERR_ARGUMENT and "null model" in msg
        rc, msg = _status(lib, lib.aotc_run(h, None, 1, None, 1))
        assert rc == abi.ERR_ARGUMENT
        sizes = (ctypes.c_int64 * 2)(2, 10)
        strides = (ctypes.c_int64 * 2)(10, 1)
        no_data = (abi.Tensor * 1)(abi.Tensor(None, sizes, strides, 2, 0))
        rc, msg = _status(lib, lib.aotc_output_shapes(h, no_data, 1, (ctypes.c_int64 * 2)()))
        assert rc == abi.ERR_ARGUMENT and "null data" in msg
        no_sizes = (abi.Tensor * 1)(abi.Tensor(None, None, None, 2, 0))
        rc, msg = _status(lib, lib.aotc_output_shapes(h, no_sizes, 1, (ctypes.c_int64 * 2)()))
        assert rc == abi.ERR_ARGUMENT and "null sizes" in msg
        rc, msg = _status(lib, lib.aotc_output_shapes(h, no_data, 2, (ctypes.c_int64 * 2)()))
        assert rc == abi.ERR_INPUT and "expected 1 inputs, got 2" in msg
        buf = (ctypes.c_float * 20)()
        good = (abi.Tensor * 1)(abi.Tensor(ctypes.addressof(buf), sizes, strides, 2, 0))
        out_sizes = (ctypes.c_int64 * 2)(3, 1)
        out_strides = (ctypes.c_int64 * 2)(1, 1)
        out = (abi.Tensor * 1)(abi.Tensor(ctypes.addressof(buf), out_sizes, out_strides, 2, 0))
        rc, msg = _status(lib, lib.aotc_run(h, good, 1, out, 1))
        assert rc == abi.ERR_INPUT and "output 0: dim 0 is 3, expected 2" in msg
        rc, msg = _status(lib, lib.aotc_run(h, good, 1, out, 2))
        assert rc == abi.ERR_INPUT and "expected 1 outputs, got 2" in msg
    finally:
        lib.aotc_destroy(h)
    lib.aotc_destroy(None)  # a no-op, not a crash
