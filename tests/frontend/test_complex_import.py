"""The import of complex values (frontend/complex.py): a complex input, constant and output
become real buffers of (real, imag) pairs marked with their ABI dtype; every complex node is
traced into real ops only; a rule whose result disagrees with export's value is refused."""
from __future__ import annotations

import pytest
import sympy
import torch

from aotc.dtypes import DType
from aotc.errors import CompileError, InternalError
from aotc.frontend import complex_ops
from aotc.frontend.importer import import_program
from aotc.ir.complex import abi_dtype, abi_sizes
from aotc.ir.nodes import BufferKind
from aotc.ir.printer import format_program
from aotc.passes.pipeline import compile_program
from aotc.target import host_target


class Scale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("c", torch.full((4,), 1 - 2j, dtype=torch.complex128))

    def forward(self, z, x):
        y = z * self.c
        return y, y.abs(), torch.view_as_complex(x)


def export() -> torch.export.ExportedProgram:
    z = torch.randn(3, 4, dtype=torch.complex128)
    return torch.export.export(Scale(), (z, torch.randn(5, 2)))


def test_boundary_buffers_hold_pairs_and_keep_their_abi_view():
    program = import_program(export())
    z = program.buffers[program.inputs[0].buffer]
    assert (z.kind, z.dtype, z.sizes) == (BufferKind.INPUT, DType.float64, (3, 4, 2))
    assert abi_dtype(program, z.name) is DType.complex128
    assert abi_sizes(program, z.name) == (sympy.Integer(3), sympy.Integer(4))
    c = program.buffers[program.constants[0].buffer]
    assert (c.dtype, c.sizes, abi_dtype(program, c.name)) == (DType.float64, (4, 2),
                                                             DType.complex128)
    data = program.constants[0].data
    assert data.dtype == torch.float64 and data[:, 0].eq(1).all() and data[:, 1].eq(-2).all()
    y, magnitude, view = program.outputs
    assert [abi_dtype(program, o) for o in program.outputs] == [
        DType.complex128, DType.float64, DType.complex64]
    assert [abi_sizes(program, o) for o in program.outputs] == [(3, 4), (3, 4), (5,)]
    assert program.buffers[view].sizes == (5, 2)  # a copy of the input: outputs are computed
    # no buffer inside the program is complex
    assert not any(b.dtype.is_complex for b in program.buffers.values())


def test_a_rule_that_disagrees_with_export_is_refused(monkeypatch):
    monkeypatch.setitem(complex_ops.RULES, "aten::mul", lambda out, a, b: a.re)  # a real value
    with pytest.raises(InternalError, match="complex form of aten.mul.Tensor"):
        import_program(export())


def test_complex32_is_a_compile_error():
    class Half(torch.nn.Module):
        def forward(self, x):
            return torch.view_as_complex(x) * 2

    ep = torch.export.export(Half(), (torch.randn(3, 2, dtype=torch.float16),))
    with pytest.raises(CompileError, match="complex32.*complex64, complex128"):
        import_program(ep)


def test_product_sum_and_conj_fuse_into_one_loop_each():
    """add, mul and conj are written over whole pairs: after fusion each output is one loop
    reading the inputs' pairs (only 2-element sign vectors stay apart), never two halves
    computed apart and stacked."""
    class Product(torch.nn.Module):
        def forward(self, z, w):
            return z * w + 1, z.conj()

    z = torch.randn(3, 4, dtype=torch.complex64)
    program = compile_program(torch.export.export(Product(), (z, z.clone())), host_target(),
                              build=False).program
    loops = [b.name for b in program.computed() if b.sizes != (2,)]
    assert loops == program.outputs, format_program(program)
    text = format_program(program)
    assert "mul(in_z[i0, i1, i2], in_w[i0, i1, 0])" in text and "in_z[i0, i1, 1 - i2]" in text
