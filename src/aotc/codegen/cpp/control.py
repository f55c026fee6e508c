"""Guards in the run function: a kernel computed inside a torch.cond branch runs only
when its branch's predicates hold (a tensor predicate is read into a local right after
its kernel, so its arena slot may be reused)."""
from __future__ import annotations

import sympy

from ...ir.control import Guard, predicate_buffers
from ...ir.nodes import Program
from .exprs import c_index

_RELATIONS = {sympy.StrictGreaterThan: ">", sympy.GreaterThan: ">=", sympy.StrictLessThan: "<",
              sympy.LessThan: "<=", sympy.Equality: "==", sympy.Unequality: "!="}


def guard_locals(program: Program) -> list[str]:
    return [f"bool g_{name} = false;" for name in sorted(predicate_buffers(program.guards))]


def after_kernel(program: Program, names: list[str]) -> list[str]:
    """Statements right after a kernel computing `names`: save each predicate it computed."""
    preds = predicate_buffers(program.guards)
    return [f"g_{n} = {n}[0];" for n in names if n in preds]


def guard_condition(program: Program, names: list[str]) -> str:
    """The C++ condition under which a kernel computing `names` runs ("" for always): the
    guards its buffers share."""
    guards = {program.guards.get(n, ()) for n in names}
    if len(guards) != 1:  # members of different branches: run it whatever the predicates
        return ""
    return " && ".join(_text(g) for g in next(iter(guards)))


def _text(g: Guard) -> str:
    if isinstance(g.predicate, str):
        cond = f"g_{g.predicate}"
    elif isinstance(g.predicate, sympy.logic.boolalg.BooleanAtom):
        cond = "true" if bool(g.predicate) else "false"
    else:
        op = next(o for cls, o in _RELATIONS.items() if isinstance(g.predicate, cls))
        a, b = g.predicate.args
        cond = f"({c_index(a)}) {op} ({c_index(b)})"
    return cond if g.value else f"!({cond})"
