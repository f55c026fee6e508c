"""Where in the kernel sequence each symbol bound during the run (ir/binding.py) binds:
right after the kernel computing the last buffer its value reads. The kernels after a
binding point form a *stage*: buffers whose sizes use the stage's symbols get arena
memory sized when the stage starts (scheduler/memory.py)."""
from __future__ import annotations

from collections.abc import Sequence

import sympy

from ..errors import CompileError
from ..ir.binding import late_symbols, symbol_dependencies
from ..ir.nodes import Buffer, Program


def binding_steps(program: Program, steps: Sequence[Sequence[Buffer]]) -> dict[sympy.Symbol, int]:
    """Each symbol bound during the run -> the kernel step after which it binds."""
    late = late_symbols(program)
    if not late:
        return {}
    step_of = {b.name: t for t, members in enumerate(steps) for b in members}
    out: dict[sympy.Symbol, int] = {}
    for s, reads in late.items():
        for b in reads:
            if program.guards.get(b):
                raise CompileError(f"the value of {s} (a .item() or a selected count) is computed "
                                   "inside torch.cond or torch.while_loop; aotc binds such "
                                   "values only from kernels that always run")
        at = [step_of[b] for b in reads] + [out[d] for d in symbol_dependencies(program, s)
                                            if d in out]
        out[s] = max(at) if at else -1
    return out


def stage_of_symbols(bindings: dict[sympy.Symbol, int]) -> dict[sympy.Symbol, int]:
    """Each symbol bound during the run -> its stage (1, 2, ...: the order of binding points)."""
    points = sorted(set(bindings.values()))
    return {s: points.index(t) + 1 for s, t in bindings.items()}


def stage_of(expr, stages: dict[sympy.Symbol, int]) -> int:
    """The stage after which `expr` (a size) can be evaluated: 0 when it needs no symbol
    bound during the run."""
    return max((stages.get(s, 0) for s in sympy.sympify(expr).free_symbols), default=0)
