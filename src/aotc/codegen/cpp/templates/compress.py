"""The kernels of a Compress (walk the mask in row-major order on one thread and append
one block per selected position, so rows come in PyTorch's order on every run) and of a
MaskedScatter (the same walk, writing the next row of values at each selected position).
The count of selected positions, which binds a Compress's row symbol, is in bind.py."""
from __future__ import annotations

from contextlib import contextmanager

from ....ir.compress import Compress, MaskedScatter
from ....ir.nodes import Buffer, Program
from ....ir.queries import reads_of
from ....ir.symbols import flat_offset, index_var, numel, reduction_var
from .. import ops
from ..code import CodeBuffer
from ..context import EmitContext
from ..exprs import BodyEmitter, c_index
from ..kernels import Kernel, describe, index_exprs, program_symbol_index, symbols_in
from . import emits_kernel


@contextmanager
def _walk_kernel(code: CodeBuffer, program: Program, buf: Buffer, kid: int, exprs):
    """The function of a mask walk: its header comment, signature (the output, then every
    buffer it reads) and the shape symbols that `exprs` and the buffers' sizes use; yields
    (its name, the buffers read, their sizes) with the body open."""
    reads = sorted(reads_of(buf))
    sizes = {b: program.buffers[b].sizes for b in reads}
    params = ["int *oob", f"{buf.dtype.ctype} *__restrict out"] + [
        f"const {program.buffers[b].dtype.ctype} *__restrict {b}" for b in reads]
    used = [*buf.sizes, *exprs, *(s for b in reads for s in sizes[b])]
    name = f"k{kid}_{buf.name}"
    code.lines_of(describe(buf))
    with code.block(f"static void {name}(const int64_t *sym, {', '.join(params)})"):
        for s in symbols_in(program, *used):
            code.line(f"const int64_t {s.name} = sym[{program_symbol_index(program, s)}];")
        yield name, reads, sizes
    code.line()


@emits_kernel(Compress)
def emit_compress(code: CodeBuffer, program: Program, buf: Buffer, kid: int,
                  ctx: EmitContext) -> Kernel:
    op = buf.op
    assert isinstance(op, Compress)
    exprs = [*op.ranges, *op.inner, *index_exprs(op.mask), *index_exprs(op.value)]
    if op.fill is not None:
        exprs += index_exprs(op.fill)
    with _walk_kernel(code, program, buf, kid, exprs) as (name, reads, sizes):
        code.line(f"const int64_t rows = {c_index(buf.sizes[0])};")
        if op.fill is not None:  # a fixed capacity: every row starts as the fill value
            body = BodyEmitter(sizes, lambda b: b)
            fill = body.value(op.fill)
            code.lines_of(body.lines)
            code.line(f"for (int64_t k = 0; k < rows * {c_index(numel(op.inner))}; ++k) "
                      f"out[k] = {fill};")
        full = "return;" if op.fill is not None else \
            "{ __atomic_store_n(oob, 1, __ATOMIC_RELAXED); return; }"
        code.line("int64_t row = 0;")
        rv = [reduction_var(k) for k in range(len(op.ranges))]
        _open(code, rv, op.ranges)
        body = BodyEmitter(sizes, lambda b: b)
        keep = body.value(op.mask)
        code.lines_of(body.lines)
        iv = [index_var(k + 1) for k in range(len(op.inner))]
        with code.block(f"if ({keep})"):  # the row's block: its own scope for temporaries
            code.line(f"if (row >= rows) {full}")
            _open(code, iv, op.inner)
            body = BodyEmitter(sizes, lambda b: b)
            value = body.value(op.value)
            code.lines_of(body.lines)
            off = c_index(flat_offset(tuple(iv), op.inner)) if iv else "0"
            code.line(f"out[row * {c_index(numel(op.inner))} + {off}] = {value};")
            _close(code, iv)
            code.line("++row;")
        _close(code, rv)
    return Kernel(name, [buf.name] + reads, checks_bounds=True)


@emits_kernel(MaskedScatter)
def emit_masked_scatter(code: CodeBuffer, program: Program, buf: Buffer, kid: int,
                        ctx: EmitContext) -> Kernel:
    """Copy `init` in, then walk the mask in row-major order writing one row of values per
    selected position; the count of rows used is checked against the values' rows."""
    op = buf.op
    assert isinstance(op, MaskedScatter)
    exprs = [*op.ranges, *op.inner, op.rows, *index_exprs(op.init), *index_exprs(op.mask),
             *index_exprs(op.value)]
    with _walk_kernel(code, program, buf, kid, exprs) as (name, reads, sizes):
        iv = [index_var(k) for k in range(len(buf.sizes))]
        _open(code, iv, buf.sizes)
        body = BodyEmitter(sizes, lambda b: b)
        init = body.value(op.init)
        code.lines_of(body.lines)
        code.line(f"out[{c_index(flat_offset(tuple(iv), buf.sizes)) if iv else '0'}] = {init};")
        _close(code, iv)
        code.line(f"const int64_t rows = {c_index(op.rows)};")
        code.line("int64_t row = 0;")
        rv = [reduction_var(k) for k in range(len(op.ranges))]
        _open(code, rv, op.ranges)
        body = BodyEmitter(sizes, lambda b: b)
        keep = body.value(op.mask)
        code.lines_of(body.lines)
        inner = [index_var(k + 1) for k in range(len(op.inner))]
        with code.block(f"if ({keep})"):
            code.line("if (row >= rows) { __atomic_store_n(oob, 1, __ATOMIC_RELAXED); return; }")
            code.line(f"const int64_t {index_var(0)} = row;")
            _open(code, inner, op.inner)
            body = BodyEmitter(sizes, lambda b: b)
            value = body.value(op.value)
            code.lines_of(body.lines)
            at = f"out[{c_index(flat_offset(tuple(rv) + tuple(inner), buf.sizes))}]"
            if op.combine is None:
                code.line(f"{at} = {value};")
            else:
                code.line(f"{at} = {ops.binary(op.combine, at, value, buf.dtype)};")
            _close(code, inner)
            code.line("++row;")
        _close(code, rv)
        if op.exact:
            code.line("if (row != rows) __atomic_store_n(oob, 1, __ATOMIC_RELAXED);")
    what = ("the mask selects a number of positions other than the rows of values" if op.exact
            else "the mask selects more positions than the source has elements")
    return Kernel(name, [buf.name] + reads, checks_bounds=True, oob_message=what)


def _open(code: CodeBuffer, vars_, ranges) -> None:
    for v, n in zip(vars_, ranges):
        code.line(f"for (int64_t {v} = 0; {v} < {c_index(n)}; ++{v}) {{")
        code.level += 1


def _close(code: CodeBuffer, vars_) -> None:
    for _ in vars_:
        code.level -= 1
        code.line("}")
