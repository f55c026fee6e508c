"""Loop nests for pointwise and reduction buffers, printed as the loop plan
(scheduler/loops.py) says: OpenMP over the outer loops, the body once in the innermost loop,
lanes and tiles as planned. Templates: templates/.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy

from ...dtypes import DType
from ...ir.expr import IndexValue, IndirectLoad, Load, children, loads
from ...ir.nodes import ARG_REDUCTIONS, Buffer, Pointwise, Program, ReduceType, Reduction
from ...ir.queries import reads_of
from ...ir.symbols import flat_offset, index_vars, reduction_var
from ...scheduler.loops import (
    ArgReduction,
    ColumnReduction,
    CutAxis,
    LaneReduction,
    Nest,
    Parallel,
    PointwiseLoops,
    TiledCopy,
    WholeReduction,
)
from . import ops
from .code import CodeBuffer
from .exprs import BodyEmitter, c_index


@dataclass
class Kernel:
    name: str
    args: list[str]  # buffers passed after `sym` (and `oob`), in order
    checks_bounds: bool = False  # takes an `int *oob` flag raised on a bad indirect index
    oob_message: str | None = None  # what a raised flag means, where not an index range


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


def emit_kernel(code: CodeBuffer, program: Program, buf: Buffer, kid: int, nest: Nest) -> Kernel:
    """A static C++ function computing `buf` (pointwise or reduction) as `nest` loops."""
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
        NestPrinter(code, buf, body).emit(nest)
    code.line()
    return Kernel(name, [buf.name] + reads, checks_bounds)


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


def symbol_order(program: Program) -> list[sympy.Symbol]:
    """The shape symbols in the order of the `sym` array every generated function reads."""
    return sorted(program.symbols, key=lambda s: s.name)


def program_symbol_index(program: Program, sym) -> int:
    return symbol_order(program).index(sym)


class NestPrinter:
    """Prints one kernel's loop nest as its plan (scheduler/loops.py) says."""

    def __init__(self, code: CodeBuffer, buf: Buffer, body: BodyEmitter):
        self.code, self.buf, self.body = code, buf, body

    def emit(self, nest: Nest) -> None:
        _PRINTERS[type(nest)](self, nest)

    def _loops(self, vars_, ranges, parallel: Parallel | None) -> int:
        """Open `for` loops (a unit dim gets no loop), the outer ones as `parallel` says;
        returns how many."""
        loops = [(v, n) for v, n in zip(vars_, ranges) if n != 1]
        for v, n in zip(vars_, ranges):
            if n == 1:
                self.code.line(f"constexpr int64_t {v} = 0;")
        pragma = parallel_pragma(parallel)
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

    def pointwise(self, nest: PointwiseLoops) -> None:
        opened = self._loops([v for v, _ in nest.loops], [n for _, n in nest.loops],
                             nest.parallel)
        value = self._emit_body(nest.body)
        self.code.line(f"out[{c_index(nest.offset)}] = {value};")
        self._close(opened)

    def cut_axis(self, nest: CutAxis) -> None:
        sizes = self.buf.sizes
        iv = index_vars(len(sizes))
        off = flat_offset(iv, sizes)
        k = nest.axis
        rest = [(v, m) for a, (v, m) in enumerate(zip(iv, sizes)) if a != k]  # after k: unit
        opened = self._loops([v for v, _ in rest], [m for _, m in rest], nest.parallel)
        for lo, hi, piece in nest.pieces:
            with self.code.block(f"for (int64_t {iv[k]} = {lo}; {iv[k]} < {hi}; ++{iv[k]})"):
                self.code.line(f"out[{c_index(off)}] = {self._emit_body(piece)};")
        self._close(opened)

    def tiled(self, nest: TiledCopy) -> None:
        """A transposing copy: axes a < b (the last two non-unit ones) in tile x tile
        blocks, so that the strided side of the copy stays within `tile` cache lines per
        block instead of touching a new line for every element."""
        sizes, (a, b), tile = self.buf.sizes, nest.axes, nest.tile
        iv = index_vars(len(sizes))
        off = flat_offset(iv, sizes)
        outer = [(v, n) for k, (v, n) in enumerate(zip(iv, sizes)) if k not in (a, b)]
        loops = [(v, n) for v, n in outer if n != 1]
        for v, n in outer:
            if n == 1:
                self.code.line(f"constexpr int64_t {v} = 0;")
        pragma = parallel_pragma(nest.parallel)
        if pragma:
            self.code.line(pragma)
        for v, n in loops:
            self._open(v, n)
        for k in (a, b):
            v, n = iv[k], c_index(sizes[k])
            self.code.line(f"for (int64_t {v}b = 0; {v}b < {n}; {v}b += {tile}) {{")
            self.code.level += 1
        for k in (a, b):
            v, n = iv[k], c_index(sizes[k])
            self.code.line(f"const int64_t {v}e = std::min<int64_t>({v}b + {tile}, {n});")
        for k in (a, b):
            v = iv[k]
            self.code.line(f"for (int64_t {v} = {v}b; {v} < {v}e; ++{v}) {{")
            self.code.level += 1
        assert isinstance(self.buf.op, Pointwise)
        self.code.line(f"out[{c_index(off)}] = {self._emit_body(self.buf.op.body)};")
        self._close(len(loops) + 4)

    def reduction(self, nest: Nest) -> None:
        """An arg, whole or lane reduction: per output (the outer loops), its reduced axes."""
        op, sizes, d = self.buf.op, self.buf.sizes, self.buf.dtype
        assert isinstance(op, Reduction)
        iv = index_vars(len(sizes))
        rv = [reduction_var(k) for k in range(len(op.ranges))]
        opened = self._loops(iv, sizes, nest.parallel)
        acc = accumulation(op, d)
        if isinstance(nest, ArgReduction):
            self._arg_reduction(op, rv)
        elif isinstance(nest, WholeReduction):
            self._whole_reduction(op, rv, acc, nest.inner)
        else:
            assert isinstance(nest, LaneReduction)
            self.body.offset_form = nest.offset_form
            # the reduction as looped: trailing axes merged, or the innermost split
            looped = [reduction_var(k) for k in range(len(nest.reduction.ranges))]
            self._lane_reduction(nest.reduction, looped, acc, nest.lanes, nest.block)
            self.body.offset_form = None
        self.code.line(f"out[{c_index(flat_offset(iv, sizes))}] = {acc.finish('acc')};")
        self._close(opened)

    def _open(self, v, n) -> None:
        self.code.line(f"for (int64_t {v} = 0; {v} < {c_index(n)}; ++{v}) {{")
        self.code.level += 1

    def _lane_reduction(self, op: Reduction, rv, acc: Accumulation, lanes: int,
                        block: int) -> None:
        """Accumulate in `lanes` independent accumulators, element r into lane r % lanes, so
        the compiler vectorizes the innermost loop without reassociating one long chain.
        Lanes cover blocks of `block` elements and fold into `acc` after each block (in double
        for float32 sums), so no lane ever adds up more than block / lanes terms."""
        last, n = rv[-1], c_index(op.ranges[-1])
        self.code.line(f"{acc.acc_type} acc = {acc.init};")
        for v, m in zip(rv[:-1], op.ranges[:-1]):
            self._open(v, m)
        with self.code.block(f"for (int64_t rs = 0; rs < {n}; rs += {block})"):
            self.code.line(f"const int64_t re = std::min<int64_t>(rs + {block}, {n});")
            self.code.line(f"{acc.lane_type} lanes[{lanes}];")
            self.code.line(f"for (int l = 0; l < {lanes}; ++l) lanes[l] = {acc.lane_init};")
            self.code.line("int64_t rb = rs;")
            with self.code.block(f"for (; rb + {lanes} <= re; rb += {lanes})"):
                # a loop, not 16 unrolled statements: only loops get their selects vectorized
                self.code.line("#pragma omp simd")
                with self.code.block(f"for (int64_t l = 0; l < {lanes}; ++l)"):
                    self.code.line(f"const int64_t {last} = rb + l;")
                    self.code.line(acc.update("lanes[l]", self._emit_body(op.body)))
            size = op.ranges[-1]
            if not (size.is_number and int(size) % lanes == 0):  # a tail to finish
                with self.code.block("for (; rb < re; ++rb)"):
                    self.code.line(f"const int64_t {last} = rb;")
                    self.code.line(acc.update("lanes[0]", self._emit_body(op.body)))
            self.code.line(f"for (int l = 0; l < {lanes}; ++l) {acc.update('acc', 'lanes[l]')}")
        self._close(len(rv) - 1)

    def column_reduction(self, nest: ColumnReduction) -> None:
        """A reduction whose inputs are contiguous along the output's axis `inner` and
        strided along the reduced axes (a sum over dim 0, a mean over H, W of NCHW with C
        last...): the loops are interchanged so that a tile of `columns` outputs accumulates
        side by side while the reduced axes are walked, and the innermost loop, over the
        tile, reads consecutive elements and vectorizes. Each output is still the same
        left-to-right fold over the reduced elements (in double for float32 sums)."""
        op, sizes, d = self.buf.op, self.buf.sizes, self.buf.dtype
        assert isinstance(op, Reduction)
        iv = index_vars(len(sizes))
        rv = [reduction_var(k) for k in range(len(op.ranges))]
        inner, width = nest.axis, nest.width
        acc = accumulation(op, d)
        n = sizes[inner]
        outer = [(v, m) for k, (v, m) in enumerate(zip(iv, sizes)) if k != inner]
        tile = "jb"
        loops = [(v, m) for v, m in outer if m != 1]
        for v, m in outer:
            if m == 1:
                self.code.line(f"constexpr int64_t {v} = 0;")
        pragma = parallel_pragma(nest.parallel)
        if pragma:
            self.code.line(pragma)
        for v, m in loops:
            self._open(v, m)
        nc = c_index(n)
        if nest.one_tile:  # the whole axis in one tile
            self.code.line("{")
            self.code.level += 1
            self.code.line(f"constexpr int64_t {tile} = 0, je = {nc};")
        else:
            self.code.line(f"for (int64_t {tile} = 0; {tile} < {nc}; {tile} += {width}) {{")
            self.code.level += 1
            self.code.line(f"const int64_t je = std::min<int64_t>({tile} + {width}, {nc});")
        self.code.line(f"{acc.acc_type} accs[{width}];")
        self.code.line(f"for (int l = 0; l < {width}; ++l) accs[l] = {acc.init};")
        for v, m in zip(rv, op.ranges):
            self._open(v, m)
        self.code.line("#pragma omp simd")
        v = iv[inner]
        with self.code.block(f"for (int64_t {v} = {tile}; {v} < je; ++{v})"):
            self.code.line(acc.update(f"accs[{v} - {tile}]", self._emit_body(op.body)))
        self._close(len(rv))
        if acc.acc_type == d.compute.ctype == d.ctype:  # stored as accumulated: a copy
            start = flat_offset(tuple(sympy.Symbol(tile) if k == inner else x
                                      for k, x in enumerate(iv)), sizes)
            self.code.line(f"__builtin_memcpy(out + {_paren_index(start)}, accs, "
                           f"(je - {tile}) * sizeof(accs[0]));")
        else:
            with self.code.block(f"for (int64_t {v} = {tile}; {v} < je; ++{v})"):
                self.code.line(f"out[{c_index(flat_offset(iv, sizes))}] = "
                               f"{acc.finish(f'accs[{v} - {tile}]')};")
        self._close(1 + len(loops))

    def _whole_reduction(self, op: Reduction, rv, acc: Accumulation,
                         inner: Parallel | None) -> None:
        self.code.line(f"{acc.acc_type} acc = {acc.init};")
        pragma = parallel_pragma(inner, f" {acc.clause}") if inner else ""
        if pragma:
            self.code.line(pragma)
        for v, n in zip(rv, op.ranges):
            self._open(v, n)
        self.code.line(acc.update("acc", self._emit_body(op.body)))
        self._close(len(rv))

    def _arg_reduction(self, op: Reduction, rv) -> None:
        """Compare values, keep the first best position; a NaN is the best value."""
        cmp, name = (">", "max") if op.reduce_type is ReduceType.ARGMAX else ("<", "min")
        t = op.body.dtype.compute
        self.code.line(f"{t.ctype} best = {ops.reduce_init(name, t)};")
        self.code.line("int64_t acc = 0;")
        for v, n in zip(rv, op.ranges):
            self._open(v, n)
        value = self._emit_body(op.body)
        better = f"{value} {cmp} best"
        if t.is_floating:
            better = f"!std::isnan(best) && ({better} || std::isnan({value}))"
        pos = c_index(flat_offset(tuple(rv), op.ranges))
        self.code.line(f"if ({better}) {{ best = {value}; acc = {pos}; }}")
        self._close(len(rv))


_PRINTERS: dict[type, Callable] = {
    PointwiseLoops: NestPrinter.pointwise, CutAxis: NestPrinter.cut_axis,
    TiledCopy: NestPrinter.tiled, ColumnReduction: NestPrinter.column_reduction,
    ArgReduction: NestPrinter.reduction, WholeReduction: NestPrinter.reduction,
    LaneReduction: NestPrinter.reduction}


def _paren_index(e) -> str:
    text = c_index(e)
    return text if sympy.sympify(e).is_Atom else f"({text})"


@dataclass
class Accumulation:
    """How a reduction accumulates: the total's C type and initial value, the lanes' type and
    initial value, the update statement (element into lane, lane into total), the OpenMP
    reduction clause that splits a whole tensor across threads (None: no OpenMP form),
    and the stored value."""

    acc_type: str
    init: str
    lane_type: str
    lane_init: str
    update: Callable[[str, str], str]
    clause: str | None
    finish: Callable[[str], str]


def accumulation(op: Reduction, stored: DType) -> Accumulation:
    """How to accumulate a reduction whose result is stored as `stored` (half types
    accumulate in float32 lanes with a double total, like float32)."""
    d = stored.compute
    kind = op.reduce_type
    same = lambda acc: acc  # noqa: E731
    if kind in ARG_REDUCTIONS:  # emitted by _arg_reduction; the position is the value
        return Accumulation("int64_t", "0", "int64_t", "0", lambda a, v: "", None, same)
    if kind in (ReduceType.SUM, ReduceType.PROD):
        # float32 totals are double: torch's cascade summation keeps long sums near float32
        # rounding, and blocked float lanes folded into a double total do too
        acc_t = DType.float64 if d is DType.float32 else d
        sym = "+" if kind is ReduceType.SUM else "*"
        finish = same if acc_t is d else (lambda a: f"static_cast<{d.ctype}>({a})")
        return Accumulation(acc_t.ctype, ops.reduce_init(kind.value, acc_t), d.ctype,
                            ops.reduce_init(kind.value, d), lambda a, v: f"{a} {sym}= {v};",
                            f"reduction({sym}:acc)", finish)
    if kind in (ReduceType.ANY, ReduceType.ALL) or d is DType.bool:
        any_ = kind in (ReduceType.ANY, ReduceType.MAX)
        init, sym, clause = ("false", "|", "||") if any_ else ("true", "&", "&&")
        return Accumulation("bool", init, "bool", init, lambda a, v: f"{a} = {a} {sym} {v};",
                            f"reduction({clause}:acc)", same)
    cmp, name = (">", "max") if kind is ReduceType.MAX else ("<", "min")
    init = ops.reduce_init(name, d)
    if not d.is_floating:
        return Accumulation(d.ctype, init, d.ctype, init,
                            lambda a, v: f"{a} = {v} {cmp} {a} ? {v} : {a};",
                            f"reduction({name}:acc)", same)
    # floats: a NaN wins and then stays (nothing compares greater than it), as in torch.amax
    return Accumulation(d.ctype, init, d.ctype, init,
                        lambda a, v: f"{a} = (({v} {cmp} {a}) | ({v} != {v})) ? {v} : {a};",
                        None, same)


def parallel_pragma(parallel: Parallel | None, clause: str = "") -> str:
    """The OpenMP pragma of a nest's parallel loops ("" when it runs on one thread)."""
    if parallel is None:
        return ""
    collapse = f" collapse({parallel.collapse})" if parallel.collapse > 1 else ""
    work = parallel.work
    cond = "" if work.is_number else f" if({c_index(work)} >= {parallel.min_work})"
    return f"#pragma omp parallel for{collapse}{clause}{cond}"
