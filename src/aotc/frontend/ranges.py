"""The ranges a run checks the input sizes against: exactly what `ep.module()` accepts.

Export records a dynamic dim with no minimum (and every `Dim.AUTO`/`Dim.DYNAMIC` dim) as
[2, inf): its 0/1 specialisation rule keeps sizes 0 and 1 out of the trace. `ep.module()`
does not hold callers to that end: it checks a lower end only above 2 and an upper end when
finite, and checks a derived dim (`2*d`) against the range recorded for that expression
only. The program keeps those ranges, so the compiled code accepts what eager accepts, and
nothing downstream may take the recorded minimum as a fact about the sizes (every kernel
and the memory plan are valid for sizes 0 and 1)."""
from __future__ import annotations

import sympy

from ..ir.nodes import Program

# ep.module() checks a lower end only above this (the guards torch/export/_unlift.py adds
# for range constraints, and torch/_export/utils.py _check_symint, agree)
SPECIALISED_BELOW = 2


def checked_lower(lo: int) -> int:
    """A dim's lower end as ep.module() checks it: kept above 2, else 0 (a size's floor)."""
    return lo if lo > SPECIALISED_BELOW else 0


def widen_size_ranges(program: Program) -> None:
    """The lower end of each symbol that input dims bind (alone or in `2*d`) and of each
    derived size expression, as ep.module() checks it; `.item()` values and int inputs keep
    export's ranges (the graph's own checks hold them there in eager too)."""
    scalars = set(program.scalar_inputs.values())
    dims: set = set()
    for spec in program.inputs:
        for size in program.buffers[spec.buffer].sizes:
            dims |= sympy.sympify(size).free_symbols
    for s in (dims & set(program.symbols)) - scalars:
        lo, hi = program.symbols[s]
        program.symbols[s] = (checked_lower(lo), hi)
    for e, (lo, hi) in list(program.size_ranges.items()):
        program.size_ranges[e] = (checked_lower(lo), hi)

