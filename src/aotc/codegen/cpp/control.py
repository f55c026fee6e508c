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
    branch guards its buffers share (a loop's guard is the loop itself, not a condition)."""
    guards = {program.guards.get(n, ()) for n in names}
    if len(guards) != 1:  # members of different branches: run it whatever the predicates
        return ""
    return " && ".join(_text(g) for g in next(iter(guards)) if not g.loop)


def loops_of(program: Program, names: list[str]) -> tuple[str, ...]:
    """The predicates of the while_loops a kernel runs in, outermost first."""
    guards = program.guards.get(names[0], ()) if names else ()
    return tuple(g.predicate for g in guards if g.loop)


def loop_open(predicate: str) -> list[str]:
    return [f"for (;;) {{  // while_loop, until {predicate} is false"]


def loop_check(program: Program, names: list[str]) -> list[str]:
    """After the kernel computing a loop's predicate: leave the loop when it is false."""
    ends = {loop.predicate for loop in program.loops}
    return [f"if (!g_{n}) break;" for n in names if n in ends]


def loop_close(program: Program, predicate: str, nbytes_of) -> list[str]:
    """End of an iteration: each carry takes its next value."""
    loop = next(lp for lp in program.loops if lp.predicate == predicate)
    return [f"__builtin_memcpy({c}, {n}, {nbytes_of(c)});"
            for c, n in zip(loop.carries, loop.nexts)]


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
