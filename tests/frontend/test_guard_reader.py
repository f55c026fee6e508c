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
