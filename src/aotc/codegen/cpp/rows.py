"""Row-group kernels: per row of the outer axes, each reduction of the group, then the
pointwise op that reads them, in one loop nest (see scheduler/grouping.py)."""
from __future__ import annotations

import sympy

from ...ir.expr import IndirectLoad, loads
from ...ir.nodes import ARG_REDUCTIONS, Program, Reduction
from ...ir.queries import reads_of
from ...ir.symbols import flat_offset, index_vars, reduction_var
from ...scheduler.grouping import RowGroup
from ...scheduler.loops import RowLoops
from .code import CodeBuffer
from .exprs import BodyEmitter, c_index
from .kernels import (
    Kernel,
    NestPrinter,
    accumulation,
    describe,
    index_exprs,
    program_symbol_index,
    symbols_in,
)


def emit_row_group(code: CodeBuffer, program: Program, group: RowGroup, kid: int,
                   nest: RowLoops) -> Kernel:
    names = {m.name for m in group.members}
    stored = [m for m in group.members if m.name not in group.local]
    reads = sorted(set().union(*(reads_of(m) for m in group.members)) - names)
    sizes = {b: program.buffers[b].sizes for b in reads}
    sizes.update({m.name: m.sizes for m in group.members})
    params = [f"{m.dtype.ctype} *__restrict {m.name}" for m in stored] + [
        f"const {program.buffers[b].dtype.ctype} *__restrict {b}" for b in reads]
    bodies = [m.op.body for m in group.members]
    checks_bounds = any(isinstance(ld, IndirectLoad) for b in bodies for ld in loads(b))
    if checks_bounds:
        params.insert(0, "int *oob")
    used = [*group.outer, group.row, *(s for b in reads for s in sizes[b])]
    used += [e for b in bodies for e in index_exprs(b)]
    name = f"k{kid}_{group.name}"
    for m in group.members:
        code.lines_of(describe(m))
    with code.block(f"static void {name}(const int64_t *sym, {', '.join(params)})"):
        for sym in symbols_in(program, *used):
            code.line(f"const int64_t {sym.name} = sym[{program_symbol_index(program, sym)}];")
        _RowNest(code, program, group, nest).emit()
    code.line()
    return Kernel(name, [m.name for m in stored] + reads, checks_bounds)


class _RowNest(NestPrinter):
    def __init__(self, code: CodeBuffer, program: Program, group: RowGroup, nest: RowLoops):
        self.group, self.nest = group, nest
        self.scalars: dict[str, str] = {}
        sizes = {name: b.sizes for name, b in program.buffers.items()}
        body = BodyEmitter(sizes, lambda b: b, self.scalars)
        super().__init__(code, group.members[-1], body)

    def emit(self) -> None:
        g = self.group
        k = len(g.outer)
        iv = index_vars(k + 1)
        opened = self._loops(iv[:k], g.outer, self.nest.parallel)
        for m in g.members:
            if tuple(m.sizes) == g.outer + (1,):
                self._row_value(m, iv)
            else:
                self.code.line(f"for (int64_t {iv[k]} = 0; {iv[k]} < {c_index(g.row)}; "
                               f"++{iv[k]}) {{")
                self.code.level += 1
                value = self._emit_body(m.op.body)
                self.code.line(f"{m.name}[{c_index(flat_offset(iv, m.sizes))}] = {value};")
                self._close(1)
        self._close(opened)

    def _row_value(self, m, iv) -> None:
        """The member's value for this row (a reduction, or a pointwise value per row) as a
        local, also stored unless it is local to the group."""
        op, k = m.op, len(self.group.outer)
        value = f"{m.name}_row"
        self.code.line(f"{m.dtype.ctype} {value};")
        with self.code.block(""):
            self.code.line(f"constexpr int64_t {iv[k]} = 0;")
            if not isinstance(op, Reduction):
                self.code.line(f"{value} = {self._emit_body(op.body)};")
            elif op.reduce_type in ARG_REDUCTIONS:
                self._arg_reduction(op, [reduction_var(0)])
                self.code.line(f"{value} = acc;")
            else:
                acc = accumulation(op, m.dtype)
                self._lane_reduction(op, [reduction_var(0)], acc, self.nest.lanes,
                                     self.nest.block)
                self.code.line(f"{value} = {acc.finish('acc')};")
        if m.name not in self.group.local:  # outside the block: the unit axis index is 0
            index = tuple(iv[:k]) + (sympy.Integer(0),)
            self.code.line(f"{m.name}[{c_index(flat_offset(index, m.sizes))}] = {value};")
        self.scalars[m.name] = value


__all__ = ["emit_row_group"]
