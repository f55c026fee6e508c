"""Export's input guards (Python over input sizes and int inputs) read as sympy conditions
over the program's symbols; a form aotc cannot check is a CompileError, never dropped."""
from __future__ import annotations

import pytest
import sympy

from aotc.dtypes import DType
from aotc.errors import CompileError
from aotc.frontend.guards import add_assertion, import_input_guards
from aotc.ir.nodes import Buffer, BufferKind, InputSpec, Program
from aotc.ir.symbols import ModIndex


def _program():
    p = Program()
    s0, s1, n = sympy.symbols("s0 s1 n", integer=True)
    p.add(Buffer("in_x", DType.float32, (s0, s1), BufferKind.INPUT))
    p.inputs.append(InputSpec("x", "in_x"))
    p.add(Buffer("in_y_0", DType.float32, (s1,), BufferKind.INPUT))  # a list input's leaf
    p.inputs.append(InputSpec("y_0", "in_y_0"))
    p.add(Buffer("in_n", DType.int64, (), BufferKind.INPUT))
    p.inputs.append(InputSpec("n", "in_n"))
    p.scalar_inputs["in_n"] = n
    return p, (s0, s1, n)


def test_guards_read_as_conditions():
    p, (s0, s1, n) = _program()
    import_input_guards(p, ["max(L['x'].size()[0], 3) <= 2*L['y'][0].size()[0]",
                            "not (L['x'].size()[1] == 7)", "2 <= L['x'].size()[0] <= 9",
                            "(L['n'] % 2) == 0", "L['n'] != 1 or L['x'].size()[0] > 4"])
    assert [c for c, _ in p.assertions] == [
        sympy.Max(3, s0) <= 2 * s1, sympy.Ne(s1, 7), sympy.And(sympy.Le(2, s0), s0 <= 9),
        sympy.Eq(ModIndex(n, 2), 0), sympy.Or(sympy.Ne(n, 1), s0 > 4)]
    assert p.assertions[0][1] == "the input guard max(x.size()[0], 3) <= 2*y[0].size()[0]"


@pytest.mark.parametrize("code", ["L['x'].stride()[0] == 5", "L['z'].size()[0] == 2",
                                  "L['x'] == 3", "abs(L['n']) < 3"])
def test_unreadable_guards_are_refused(code):
    p, _ = _program()
    with pytest.raises(CompileError, match="cannot check at run time"):
        import_input_guards(p, [code])


def test_trivial_conditions_are_dropped_and_false_ones_refused():
    p, (s0, _, _) = _program()
    add_assertion(p, sympy.true, "a check")
    assert p.assertions == []
    with pytest.raises(CompileError, match="can never hold"):
        add_assertion(p, sympy.false, "a check")


def test_strict_exports_flattened_argument_names():
    """strict export names the user inputs L['flat_args'][i], in order."""
    p, (s0, s1, n) = _program()
    import_input_guards(p, ["L['flat_args'][0].size()[0] == L['flat_args'][1].size()[0]",
                            "L['flat_args'][2] >= 1"], ("x", "y_0", "n"))
    assert [c for c, _ in p.assertions] == [sympy.Eq(s0, s1), n >= 1]


def test_names_placeholders_could_not_hold():
    """A dict input's key with a dot ('x_torch.float32') is the placeholder x_torch_float32."""
    p, (s0, s1, _) = _program()
    p.add(Buffer("in_d", DType.float32, (s0,), BufferKind.INPUT))
    p.inputs.append(InputSpec("inputs_x_torch_float32", "in_d"))
    import_input_guards(p, ["L['inputs']['x_torch.float32'].size()[0] <= 2 * L['x'].size()[1]"])
    assert [c for c, _ in p.assertions] == [s0 <= 2 * s1]


def test_strict_export_with_kwargs_compiles_and_checks(tmp_path):
    """transformers' export passes input_ids and cache_position as kwargs with strict=True:
    the guard relating their lengths is read, not refused."""
    import torch

    import aotc

    class Step(torch.nn.Module):
        def forward(self, input_ids, cache_position):
            return input_ids.float().sum(0) + cache_position.float()

    seq = torch.export.Dim("seq", max=64)
    kwargs = {"input_ids": torch.zeros(1, 5, dtype=torch.long), "cache_position": torch.arange(5)}
    ep = torch.export.export(Step(), (), kwargs, strict=True,
                             dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq}})
    assert any("flat_args" in g for g in ep._guards_code)
    compiled = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "s.pt2"))
    ids, pos = torch.ones(1, 7, dtype=torch.long), torch.arange(7)
    torch.testing.assert_close(compiled(input_ids=ids, cache_position=pos),
                               ep.module()(input_ids=ids, cache_position=pos))
    with pytest.raises(aotc.InputError):
        compiled(input_ids=ids, cache_position=torch.arange(6))
