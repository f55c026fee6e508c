"""Unbacked symbols bound during the run: a `.item()` or a selected count whose value reads
a computed buffer (a reduction, a matmul) binds right after the kernel that computes it,
and later kernels' sizes use it. Symbols whose value reads inputs only bind with them."""
from __future__ import annotations

import sympy

from .compress import Count
from .expr import Node, loads
from .nodes import BufferKind, Program


def value_of(body: object) -> Node:
    """The expression a symbol's value is computed from (a Count's mask)."""
    return body.mask if isinstance(body, Count) else body  # type: ignore[return-value]


def late_symbols(program: Program) -> dict[sympy.Symbol, frozenset[str]]:
    """Each symbol bound during the run -> the computed buffers its value reads. A symbol
    whose value depends on one bound during the run is itself bound during the run."""
    late: dict[sympy.Symbol, frozenset[str]] = {}
    for s, body in program.item_symbols.items():
        e = value_of(body)
        reads = frozenset(ld.buffer for ld in loads(e)
                          if program.buffers[ld.buffer].kind is BufferKind.COMPUTED)
        depends = _free_symbols(body) & set(late)
        if reads or depends:
            late[s] = reads
    return late


def symbol_dependencies(program: Program, s: sympy.Symbol) -> set[sympy.Symbol]:
    """The other item symbols the value of `s` reads."""
    return _free_symbols(program.item_symbols[s]) & (set(program.item_symbols) - {s})


def binding_buffers(program: Program) -> set[str]:
    """Computed buffers some symbol's value reads: they stay materialized and alive."""
    return {b for reads in late_symbols(program).values() for b in reads}


def outputs_sized_late(program: Program) -> bool:
    """Whether some output's size uses a symbol bound during the run: the output sizes are
    then known only after running the kernels that bind it."""
    late = set(late_symbols(program))
    return any(s.free_symbols & late for o in program.outputs for s in program.buffers[o].sizes)


def _free_symbols(body: object) -> set:
    from .expr import IndexValue, IndirectLoad, Load, children

    found: set = set()
    seen: set = set()

    def visit(x: Node) -> None:
        if x in seen:
            return
        seen.add(x)
        exprs: tuple = ()
        if isinstance(x, IndexValue):
            exprs = (x.expr,)
        elif isinstance(x, Load):
            exprs = x.index
        elif isinstance(x, IndirectLoad):
            exprs = x.index + x.bounds
        for i in exprs:
            found.update(sympy.sympify(i).free_symbols)
        for k in children(x):
            visit(k)

    visit(value_of(body))
    if isinstance(body, Count):
        for r in body.ranges:
            found.update(sympy.sympify(r).free_symbols)
    return found
