"""The kernel of a RegionWrite: copy the initial value, then run each write in order.

A write whose positions cannot repeat runs OpenMP-parallel; one with data-dependent
positions (or accumulating) runs its positions in row-major order on one thread, so the
result never depends on the thread count or on timing.
"""
from __future__ import annotations

import sympy

from ....ir.nodes import Buffer, Program
from ....ir.queries import reads_of
from ....ir.regions import RegionWrite, Write
from ....ir.symbols import flat_offset, index_vars
from ....scheduler.loops import Parallel, RegionLoops
from .. import ops
from ..code import CodeBuffer
from ..context import EmitContext
from ..exprs import BodyEmitter, c_index
from ..kernels import Kernel, describe, index_exprs, parallel_pragma, program_symbol_index, symbols_in
from . import emits_kernel


@emits_kernel(RegionWrite)
def emit_region_write(code: CodeBuffer, program: Program, buf: Buffer, kid: int,
                      ctx: EmitContext) -> Kernel:
    """A static C++ function computing `buf`; when `buf` is updated in place, `out` already
    holds the initial value (the buffer it copies shares its storage) and the copy is skipped."""
    op = buf.op
    assert isinstance(op, RegionWrite)
    in_place = buf.name in ctx.in_place
    nest = ctx.nests[buf.name]
    assert isinstance(nest, RegionLoops)
    reads = sorted(reads_of(buf) - ({op.init.buffer} if in_place else set()))  # type: ignore[union-attr]
    sizes = {b: program.buffers[b].sizes for b in reads}
    sizes[buf.name] = buf.sizes
    params = ["int *oob", f"{buf.dtype.ctype} *__restrict out"] + [
        f"const {program.buffers[b].dtype.ctype} *__restrict {b}" for b in reads]
    used = [*buf.sizes, *(s for b in reads for s in sizes[b])]
    for e in ([] if in_place else [op.init]) + [n for w in op.writes for n in w.nodes()]:
        used += index_exprs(e)
    for w in op.writes:
        used += [*w.sizes, *w.index, *w.bounds]
    code.lines_of(describe(buf))
    with code.block(f"static void {f'k{kid}_{buf.name}'}(const int64_t *sym, "
                    f"{', '.join(params)})"):
        for s in symbols_in(program, *used):
            code.line(f"const int64_t {s.name} = sym[{program_symbol_index(program, s)}];")
        code.line("(void)oob;")
        if not in_place:
            _loop(code, buf.sizes, nest.parallel, body=lambda: _assign(
                code, sizes, index_vars(len(buf.sizes)), buf.sizes, op.init, None, None))
        for k, w in enumerate(op.writes):
            code.line(f"// write {k}: {'in order' if w.ordered else 'positions are distinct'}")
            _loop(code, w.sizes, nest.writes[k],
                  body=lambda w=w: _assign(code, sizes, w.index, buf.sizes, w.value, w, buf))
    code.line()
    return Kernel(f"k{kid}_{buf.name}", [buf.name] + reads, checks_bounds=True)


def _loop(code: CodeBuffer, sizes, parallel: Parallel | None, body) -> None:
    iv = index_vars(len(sizes))
    loops = [(v, n) for v, n in zip(iv, sizes) if n != 1]
    with code.block(""):
        for v, n in zip(iv, sizes):
            if n == 1:
                code.line(f"constexpr int64_t {v} = 0;")
        pragma = parallel_pragma(parallel)
        if pragma:
            code.line(pragma)
        for v, n in loops:
            code.line(f"for (int64_t {v} = 0; {v} < {c_index(n)}; ++{v}) {{")
            code.level += 1
        body()
        for _ in loops:
            code.level -= 1
            code.line("}")


def _assign(code: CodeBuffer, sizes, index, out_sizes, value, write: Write | None,
            buf: Buffer | None) -> None:
    """out[index] = value (or +=), the index's data-dependent positions checked first."""
    body = BodyEmitter(sizes, lambda b: b)
    text = body.value(value)
    names: dict = {}
    guard: list[str] = []
    if write is not None:
        names, guard = body.bind_indirect(write.indirect, write.bounds, write.wrap, "ix")
    code.lines_of(body.lines)
    off = c_index(flat_offset(tuple(sympy.sympify(i).xreplace(names) for i in index), out_sizes))
    store = f"out[{off}] = {text};"
    if write is not None and write.combine is not None:
        assert buf is not None
        store = f"out[{off}] = {ops.binary(write.combine, f'out[{off}]', text, buf.dtype)};"
    if guard:  # a position out of range writes nothing and fails the run
        code.line(f"if ({' || '.join(guard)}) __atomic_store_n(oob, 1, __ATOMIC_RELAXED);")
        code.line(f"else {store}")
    else:
        code.line(store)
