"""Loop nests for pointwise and reduction buffers, and calls into template kernels.

The scheduler's decisions arrive as the buffers themselves (what was fused); here they
become C++ functions: OpenMP over the outer loops, the body once in the innermost loop.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ...dtypes import DType
from ...ir.expr import IndexValue, IndirectLoad, Load, children, loads
from ...ir.nodes import ARG_REDUCTIONS, Buffer, Gemm, Pointwise, Program, ReduceType, Reduction
from ...ir.symbols import flat_offset, index_vars, numel, reduction_var
from ...scheduler.memory import reads_of
from . import ops
from .code import CodeBuffer
from .exprs import BodyEmitter, c_index

PARALLEL_MIN_WORK = 16384  # elements (times reduction length) below which one thread runs


@dataclass
class Kernel:
    name: str
    reads: list[str]  # buffers passed after `out`, in order
    checks_bounds: bool = False  # takes an `int *oob` flag raised on a bad indirect index


def describe(buf: Buffer) -> list[str]:
    """The header comment of a kernel: the ATen nodes it computes and the source line."""
    o = buf.origin
    if o is None:
        return [f"// {buf.name}"]
    lines = [f"// {buf.name}: " + ", ".join(f"{n} ({t})" for n, t in zip(o.nodes, o.targets))]
    if o.source:  # a trailing backslash would splice the next line into the comment
        lines.append(f"//   from {o.source}".rstrip("\\"))
    return lines


def symbols_in(program: Program, *exprs) -> list[sympy.Symbol]:
    found: set = set()
    for e in exprs:
        found |= sympy.sympify(e).free_symbols
    return sorted((s for s in found if s in program.symbols), key=lambda s: s.name)


def emit_kernel(code: CodeBuffer, program: Program, buf: Buffer, kid: int) -> Kernel:
    """A static C++ function computing `buf` (pointwise or reduction)."""
    reads = sorted(reads_of(buf))
    name = f"k{kid}_{buf.name}"
    sizes = {b: program.buffers[b].sizes for b in reads}
    sizes[buf.name] = buf.sizes
    op = buf.op
    params = [f"{buf.dtype.ctype} *__restrict out"] + [
        f"const {program.buffers[b].dtype.ctype} *__restrict {b}" for b in reads]
    used = [*buf.sizes, *(op.ranges if isinstance(op, Reduction) else ()),
            *index_exprs(op.body), *(s for b in reads for s in sizes[b])]
    body = BodyEmitter(sizes, lambda b: "out" if b == buf.name else b)
    checks_bounds = any(isinstance(ld, IndirectLoad) for ld in loads(op.body))
    if checks_bounds:
        params.insert(0, "int *oob")
    code.lines_of(describe(buf))
    with code.block(f"static void {name}(const int64_t *sym, {', '.join(params)})"):
        for sym in symbols_in(program, *used):
            code.line(f"const int64_t {sym.name} = sym[{program_symbol_index(program, sym)}];")
        nest = _Nest(code, buf, body)
        if isinstance(op, Pointwise):
            nest.pointwise(op)
        else:
            nest.reduction(op)
    code.line()
    return Kernel(name, reads, checks_bounds)


def index_exprs(body) -> list:
    """Every index expression a body evaluates (Load indices and IndexValues)."""
    out: list = []
    seen: set = set()

    def visit(e) -> None:
        if e in seen:
            return
        seen.add(e)
        if isinstance(e, Load):
            out.extend(e.index)
        elif isinstance(e, IndirectLoad):
            out.extend(e.index + e.bounds)
        elif isinstance(e, IndexValue):
            out.append(e.expr)
        for k in children(e):
            visit(k)

    visit(body)
    return out


def program_symbol_index(program: Program, sym) -> int:
    return sorted(program.symbols, key=lambda s: s.name).index(sym)


class _Nest:
    """The loop nest of one kernel."""

    def __init__(self, code: CodeBuffer, buf: Buffer, body: BodyEmitter):
        self.code, self.buf, self.body = code, buf, body

    def _loops(self, vars_, ranges, work, collapse: int):
        """Open `for` loops (a unit dim gets no loop), the outer ones OpenMP-parallel when
        `work` (elements times reduction length) can reach the threshold; returns how many."""
        loops = [(v, n) for v, n in zip(vars_, ranges) if n != 1]
        for v, n in zip(vars_, ranges):
            if n == 1:
                self.code.line(f"constexpr int64_t {v} = 0;")
        pragma = parallel_pragma(work, min(collapse, len(loops)))
        for k, (v, n) in enumerate(loops):
            if k == 0 and pragma:
                self.code.line(pragma)
            self.code.line(f"for (int64_t {v} = 0; {v} < {c_index(n)}; ++{v}) {{")
            self.code.level += 1
        return len(loops)

    def _close(self, n: int) -> None:
        for _ in range(n):
            self.code.level -= 1
            self.code.line("}")

    def _emit_body(self, e):
        self.body.lines = []
        value = self.body.value(e)
        self.code.lines_of(self.body.lines)
        self.body.names.clear()
        return value

    def pointwise(self, op: Pointwise) -> None:
        sizes = self.buf.sizes
        iv = index_vars(len(sizes))
        n_loops = sum(1 for n in sizes if n != 1)
        opened = self._loops(iv, sizes, numel(sizes), max(n_loops - 1, 1))
        value = self._emit_body(op.body)
        off = flat_offset(iv, sizes)
        self.code.line(f"out[{c_index(off)}] = {value};")
        self._close(opened)

    def reduction(self, op: Reduction) -> None:
        sizes, d = self.buf.sizes, self.buf.dtype
        kind = op.reduce_type.value
        iv = index_vars(len(sizes))
        rv = [reduction_var(k) for k in range(len(op.ranges))]
        work = sympy.expand(numel(sizes) * numel(op.ranges))
        opened = self._loops(iv, sizes, work, len(sizes))
        # float32 sums and products accumulate in double: torch's cascade summation keeps
        # the error of long sums near float32 rounding, and a double accumulator does too
        acc_type = DType.float64 if (d is DType.float32 and kind in ("sum", "prod")) else d
        if op.reduce_type in ARG_REDUCTIONS:  # compare values, keep the first best position
            acc_type = op.body.dtype
            init = ops.reduce_init("max" if op.reduce_type is ReduceType.ARGMAX else "min", acc_type)
            self.code.line(f"{acc_type.ctype} acc = {init};")
            self.code.line("int64_t arg = 0;")
        else:
            self.code.line(f"{acc_type.ctype} acc = {ops.reduce_init(kind, acc_type)};")
        whole_sum = opened == 0 and op.reduce_type in (ReduceType.SUM, ReduceType.PROD)
        for k, (v, n) in enumerate(zip(rv, op.ranges)):
            if k == 0 and whole_sum:  # a full reduction: split it across threads
                sym = "+" if op.reduce_type is ReduceType.SUM else "*"
                pragma = parallel_pragma(work, len(rv), f" reduction({sym}:acc)")
                if pragma:
                    self.code.line(pragma)
            elif k == len(rv) - 1 and op.reduce_type is ReduceType.SUM and not whole_sum:
                self.code.line("#pragma omp simd reduction(+:acc)")
            self.code.line(f"for (int64_t {v} = 0; {v} < {c_index(n)}; ++{v}) {{")
            self.code.level += 1
        value = self._emit_body(op.body)
        if op.reduce_type in ARG_REDUCTIONS:
            self._arg_step(op, rv, value)
        elif whole_sum:
            sym = "+" if op.reduce_type is ReduceType.SUM else "*"
            self.code.line(f"acc {sym}= {value};")
        else:
            self.code.line(f"acc = {ops.reduce_combine(kind, 'acc', value, acc_type)};")
        self._close(len(rv))
        off = flat_offset(iv, sizes)
        result = "acc" if acc_type is d else f"static_cast<{d.ctype}>(acc)"
        if op.reduce_type in ARG_REDUCTIONS:
            result = "arg"
        self.code.line(f"out[{c_index(off)}] = {result};")
        self._close(opened)


    def _arg_step(self, op: Reduction, rv, value: str) -> None:
        """Take `value` when strictly better; a NaN is the best value, and the first one wins."""
        cmp = ">" if op.reduce_type is ReduceType.ARGMAX else "<"
        better = f"{value} {cmp} acc"
        if op.body.dtype.is_floating:
            better = f"!std::isnan(acc) && ({better} || std::isnan({value}))"
        pos = c_index(flat_offset(tuple(rv), op.ranges))
        self.code.line(f"if ({better}) {{ acc = {value}; arg = {pos}; }}")


def parallel_pragma(work, collapse: int, extra: str = "") -> str:
    """The OpenMP pragma for a loop nest doing `work`, or "" when it is surely too small."""
    work = sympy.sympify(work)
    if work.is_number and work < PARALLEL_MIN_WORK:
        return ""
    clause = f" collapse({collapse})" if collapse > 1 else ""
    cond = "" if work.is_number else f" if({c_index(work)} >= {PARALLEL_MIN_WORK})"
    return f"#pragma omp parallel for{clause}{extra}{cond}"


def gemm_call(buf: Buffer, pointer_of) -> list[str]:
    """The call into the shipped GEMM for a Gemm buffer (a statement list)."""
    op: Gemm = buf.op
    if buf.dtype is not DType.float32:
        raise NotImplementedError("only float32 GEMM")

    def arg(o):
        return f"{pointer_of(o.buffer)} + {c_index(o.offset)}", [c_index(s) for s in o.strides]

    a, sa = arg(op.a)
    b, sb = arg(op.b)
    m, n = c_index(op.m), c_index(op.n)
    if op.bias is not None:
        bias, sbias = arg(op.bias)
    else:
        bias, sbias = "nullptr", ["0", "0", "0"]
    mn = c_index(sympy.expand(op.m * op.n))
    return describe(buf) + [
        f"aotc_sgemm_batched({c_index(op.batch)}, {m}, {n}, {c_index(op.k)},",
        f"                   {a}, {', '.join(sa)},",
        f"                   {b}, {', '.join(sb)},",
        f"                   {pointer_of(buf.name)}, {mn}, {n},",
        f"                   {bias}, {', '.join(sbias)}, {ops.literal(op.alpha, DType.float32)}, "
        f"{ops.literal(op.beta, DType.float32)});",
    ]

