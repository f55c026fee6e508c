"""Loop nests for pointwise and reduction buffers (template calls: templates.py).

The scheduler's decisions arrive as the buffers themselves (what was fused); here they
become C++ functions: OpenMP over the outer loops, the body once in the innermost loop,
lanes, tiles and the parallel threshold from the target's `loops`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy

from ...dtypes import DType
from ...ir.expr import (
    Binary,
    BinaryOp,
    Constant,
    IndexValue,
    IndirectLoad,
    Load,
    Where,
    children,
    loads,
    rebuild,
    simplify_loads,
    substitute_index,
    with_index,
)
from ...ir.nodes import ARG_REDUCTIONS, Buffer, Pointwise, Program, ReduceType, Reduction
from ...ir.queries import reads_of
from ...ir.symbols import (
    FloorDiv,
    ModIndex,
    flat_offset,
    index_vars,
    numel,
    reduction_var,
    simplify_index,
)
from ...target import Loops, Target
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


def emit_kernel(code: CodeBuffer, program: Program, buf: Buffer, kid: int, target: Target) -> Kernel:
    """A static C++ function computing `buf` (pointwise or reduction), its loops blocked for
    `target`."""
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
        nest = _Nest(code, buf, body, target.loops)
        if isinstance(op, Pointwise):
            nest.pointwise(op)
        else:
            nest.reduction(op)
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


class _Nest:
    """The loop nest of one kernel."""

    def __init__(self, code: CodeBuffer, buf: Buffer, body: BodyEmitter, loops: Loops):
        self.code, self.buf, self.body, self.loops = code, buf, body, loops

    def _loops(self, vars_, ranges, work, collapse: int):
        """Open `for` loops (a unit dim gets no loop), the outer ones OpenMP-parallel when
        `work` (elements times reduction length) can reach the threshold; returns how many."""
        loops = [(v, n) for v, n in zip(vars_, ranges) if n != 1]
        for v, n in zip(vars_, ranges):
            if n == 1:
                self.code.line(f"constexpr int64_t {v} = 0;")
        pragma = parallel_pragma(work, min(collapse, len(loops)), self.loops)
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
        off = flat_offset(iv, sizes)
        body = op.body
        loop_vars, loop_sizes = list(iv), list(sizes)
        split = split_inner_axis(body, iv, sizes)
        if split is not None:  # the innermost axis as (outer, inner) loops: see split_inner_axis
            k, c, body = split
            outer, inner = split_vars(iv[k])
            loop_vars[k:k + 1] = [outer, inner]
            loop_sizes[k:k + 1] = [sympy.cancel(sizes[k] / c), c]
            off = sympy.expand(off.xreplace({iv[k]: c * outer + inner}))
        n_loops = sum(1 for n in loop_sizes if n != 1)
        tiles = None if split is not None else transpose_axes(body, iv, sizes, self.body.sizes)
        if tiles is not None:
            self._tiled(body, iv, sizes, off, *tiles)
            return
        pieces = None if split is not None else split_at_conditions(body, iv, sizes)
        if pieces is None:
            opened = self._loops(loop_vars, loop_sizes, numel(sizes), max(n_loops - 1, 1))
            value = self._emit_body(body)
            self.code.line(f"out[{c_index(off)}] = {value};")
            self._close(opened)
            return
        # the innermost axis in ranges where every condition on it is settled (a cat)
        k = max(a for a, n in enumerate(sizes) if n != 1)
        rest = [(v, m) for a, (v, m) in enumerate(zip(iv, sizes)) if a != k]  # after k: unit
        opened = self._loops([v for v, _ in rest], [m for _, m in rest], numel(sizes),
                             max(n_loops - 1, 1))
        for lo, hi, piece in pieces:
            with self.code.block(f"for (int64_t {iv[k]} = {lo}; {iv[k]} < {hi}; ++{iv[k]})"):
                self.code.line(f"out[{c_index(off)}] = {self._emit_body(piece)};")
        self._close(opened)

    def _tiled(self, body, iv, sizes, off, a: int, b: int) -> None:
        """A transposing copy: axes a < b (the last two non-unit ones) in tile x tile
        blocks, so that the strided side of the copy stays within `tile` cache lines per
        block instead of touching a new line for every element."""
        tile = self.loops.tile
        outer = [(v, n) for k, (v, n) in enumerate(zip(iv, sizes)) if k not in (a, b)]
        loops = [(v, n) for v, n in outer if n != 1]
        for v, n in outer:
            if n == 1:
                self.code.line(f"constexpr int64_t {v} = 0;")
        pragma = parallel_pragma(numel(sizes), len(loops) + 2, self.loops)
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
        self.code.line(f"out[{c_index(off)}] = {self._emit_body(body)};")
        self._close(len(loops) + 4)

    def reduction(self, op: Reduction) -> None:
        sizes, d = self.buf.sizes, self.buf.dtype
        iv = index_vars(len(sizes))
        rv = [reduction_var(k) for k in range(len(op.ranges))]
        work = sympy.expand(numel(sizes) * numel(op.ranges))
        inner = column_axis(op, sizes, rv, self.body.sizes, self.loops)
        if inner is not None:
            self._column_reduction(op, iv, rv, inner, work)
            return
        opened = self._loops(iv, sizes, work, len(sizes))
        acc = accumulation(op, d)
        if op.reduce_type in ARG_REDUCTIONS:
            self._arg_reduction(op, rv)
        elif not rv or (opened == 0 and acc.clause is not None):
            self._whole_reduction(op, rv, acc, work)  # one output: split it across threads
        else:
            merged = merge_reduced_axes(op, self.body.sizes)
            if merged is not None:  # the trailing reduced axes as one run of elements
                op, self.body.offset_form = merged
                rv = rv[:len(op.ranges)]
            self._lane_reduction(op, rv, acc)
            self.body.offset_form = None
        self.code.line(f"out[{c_index(flat_offset(iv, sizes))}] = {acc.finish('acc')};")
        self._close(opened)

    def _open(self, v, n) -> None:
        self.code.line(f"for (int64_t {v} = 0; {v} < {c_index(n)}; ++{v}) {{")
        self.code.level += 1

    def _lane_reduction(self, op: Reduction, rv, acc: Accumulation) -> None:
        """Accumulate in `lanes` independent accumulators, element r into lane r % lanes, so
        the compiler vectorizes the innermost loop without reassociating one long chain.
        Lanes cover blocks of `block` elements and fold into `acc` after each block (in double
        for float32 sums), so no lane ever adds up more than block / lanes terms."""
        last, n = rv[-1], c_index(op.ranges[-1])
        lanes, block = self.loops.lanes, self.loops.block
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

    def _column_reduction(self, op: Reduction, iv, rv, inner: int, work) -> None:
        """A reduction whose inputs are contiguous along the output's axis `inner` and
        strided along the reduced axes (a sum over dim 0, a mean over H, W of NCHW with C
        last...): the loops are interchanged so that a tile of `columns` outputs accumulates
        side by side while the reduced axes are walked, and the innermost loop, over the
        tile, reads consecutive elements and vectorizes. Each output is still the same
        left-to-right fold over the reduced elements (in double for float32 sums)."""
        sizes, d = self.buf.sizes, self.buf.dtype
        acc = accumulation(op, d)
        n = sizes[inner]
        outer = [(v, m) for k, (v, m) in enumerate(zip(iv, sizes)) if k != inner]
        tile = "jb"
        loops = [(v, m) for v, m in outer if m != 1]
        for v, m in outer:
            if m == 1:
                self.code.line(f"constexpr int64_t {v} = 0;")
        one_tile = n.is_number and int(n) <= self.loops.columns
        pragma = parallel_pragma(work, len(loops) + (0 if one_tile else 1), self.loops)
        if pragma and (loops or not one_tile):
            self.code.line(pragma)
        for v, m in loops:
            self._open(v, m)
        nc = c_index(n)
        width = self.loops.columns
        if one_tile:  # the whole axis in one tile
            width = int(n)
            self.code.line("{")
            self.code.level += 1
            self.code.line(f"constexpr int64_t {tile} = 0, je = {nc};")
        else:
            self._open_tiles(tile, nc)
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

    def _open_tiles(self, tile: str, n: str) -> None:
        columns = self.loops.columns
        self.code.line(f"for (int64_t {tile} = 0; {tile} < {n}; {tile} += {columns}) {{")
        self.code.level += 1
        self.code.line(f"const int64_t je = std::min<int64_t>({tile} + {columns}, {n});")

    def _whole_reduction(self, op: Reduction, rv, acc: Accumulation, work) -> None:
        self.code.line(f"{acc.acc_type} acc = {acc.init};")
        pragma = (parallel_pragma(work, len(rv), self.loops, f" {acc.clause}")
                  if rv and acc.clause else "")
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


def merge_reduced_axes(op: Reduction, buffer_sizes: dict) -> tuple | None:
    """(op over fewer ranges, offset form for the body) when the trailing reduced axes are
    read as one contiguous run by every load (H, W of a global average pool over NCHW:
    W*r0 + r1): looped as one axis, the lanes cover H*W elements instead of rows of W, too
    short for a vector when W is 7. None when nothing merges."""
    if any(not isinstance(ld, Load) for ld in loads(op.body)) or any(
            isinstance(x, IndexValue) for x in _nodes(op.body)):
        return None
    ranges = list(op.ranges)
    mapping: dict = {}
    offsets = [flat_offset(ld.index, buffer_sizes[ld.buffer]) for ld in loads(op.body)]
    while len(ranges) >= 2:
        k = len(ranges) - 1
        a, n = reduction_var(k - 1), ranges[k]
        step = {reduction_var(k - 1): FloorDiv(a, n), reduction_var(k): ModIndex(a, n)}
        trial = {v: sympy.sympify(e).xreplace(step) for v, e in mapping.items()}
        trial.update({v: e for v, e in step.items() if v not in mapping})
        span = {a: sympy.expand(ranges[k - 1] * n)}
        merged = [simplify_index(sympy.sympify(off).xreplace(trial), span) for off in offsets]
        if any(f.args[0].has(a) for off in merged for f in off.atoms(FloorDiv, ModIndex)):
            break
        mapping = trial
        ranges[k - 1:] = [span[a]]
    if not mapping:
        return None
    return Reduction(op.reduce_type, tuple(ranges), op.body), (mapping, {
        reduction_var(len(ranges) - 1): ranges[-1]})


def _nodes(body) -> list:
    out, seen, stack = [], set(), [body]
    while stack:
        e = stack.pop()
        if e not in seen:
            seen.add(e)
            out.append(e)
            stack.extend(children(e))
    return out


SPLIT_MIN = 8  # the shortest inner loop worth splitting an axis for


def split_vars(v: sympy.Symbol) -> tuple[sympy.Symbol, sympy.Symbol]:
    return (sympy.Symbol(f"{v.name}o", integer=True, nonnegative=True),
            sympy.Symbol(f"{v.name}i", integer=True, nonnegative=True))


def split_inner_axis(body, iv, sizes) -> tuple | None:
    """(axis, c, body) when the innermost non-unit axis is read through `v // c` and `v % c`
    (a reshape that merged axes after a permute, as in (B, H, S, D) -> (B, S, H*D)): with
    the axis looped as v = c*vo + vi, the divisions and moduli vanish from the loads and
    the inner loop over vi reads consecutive elements. None when no such c divides the
    axis (or the inner loop would be shorter than SPLIT_MIN)."""
    axes = [k for k, n in enumerate(sizes) if n != 1]
    if not axes:
        return None
    k = axes[-1]
    v, n = iv[k], sympy.sympify(sizes[k])
    factors: set = set()
    for ld in loads(body):
        if not isinstance(ld, Load):
            return None
        for e in ld.index:
            for f in sympy.sympify(e).atoms(FloorDiv, ModIndex):
                c = f.args[1]
                if v in f.args[0].free_symbols and c.is_Integer and int(c) >= SPLIT_MIN:
                    factors.add(int(c))
    outer, inner = split_vars(v)
    for c in sorted(factors, reverse=True):
        m = sympy.cancel(n / c)
        if not _divides_exactly(m):
            continue
        split = simplify_loads(substitute_index(body, {v: c * outer + inner}),
                               {outer: m, inner: sympy.Integer(c)})
        if not any(f.args[0].has(inner) for ld in loads(split) for e in ld.index
                   for f in sympy.sympify(e).atoms(FloorDiv, ModIndex)):
            return k, sympy.Integer(c), split
    return None


_SETTLED = {  # (true over [lo, hi), false over [lo, hi)) for `v op b`
    BinaryOp.LT: lambda lo, hi, b: (hi <= b, lo >= b),
    BinaryOp.GE: lambda lo, hi, b: (lo >= b, hi <= b),
    BinaryOp.LE: lambda lo, hi, b: (hi <= b + 1, lo > b),
    BinaryOp.GT: lambda lo, hi, b: (lo > b, hi <= b + 1),
}
_FLIPPED = {BinaryOp.LT: BinaryOp.GT, BinaryOp.GT: BinaryOp.LT, BinaryOp.LE: BinaryOp.GE,
            BinaryOp.GE: BinaryOp.LE}
MAX_PIECES = 8  # ranges an axis is cut into at most (one per input of a cat)


def _compares_axis(e, v) -> tuple | None:
    """(op, bound) when `e` compares the loop variable `v` itself with a fixed integer."""
    if not (isinstance(e, Binary) and e.op in _SETTLED):
        return None
    for a, b, op in ((e.a, e.b, e.op), (e.b, e.a, _FLIPPED[e.op])):
        if not (isinstance(a, IndexValue) and sympy.sympify(a.expr) == v):
            continue
        if isinstance(b, Constant) and not isinstance(b.value, bool) \
                and float(b.value) == int(b.value):
            return op, int(b.value)
        if isinstance(b, IndexValue) and sympy.sympify(b.expr).is_Integer:
            return op, int(b.expr)
    return None


def split_at_conditions(body, iv, sizes) -> list | None:
    """[(lo, hi, body)] covering the innermost axis when the body selects by comparing its
    index with fixed bounds (torch.cat along the last axis): in each range every such
    comparison has one value, so the selects and the clamps of the indices (min/max with
    the range's ends) fold away and each loop reads one input contiguously. None when no
    comparison cuts the axis, or the axis length is not a number."""
    axes = [k for k, n in enumerate(sizes) if n != 1]
    if not axes or not sympy.sympify(sizes[axes[-1]]).is_Integer:
        return None
    v, n = iv[axes[-1]], int(sizes[axes[-1]])
    nodes: list = []
    seen: set = set()
    stack = [body]
    while stack:
        e = stack.pop()
        if e not in seen:
            seen.add(e)
            nodes.append(e)
            stack.extend(children(e))
    tests = {e: t for e in nodes if (t := _compares_axis(e, v)) is not None}
    cuts = set()
    for op, b in tests.values():
        cut = b + 1 if op in (BinaryOp.LE, BinaryOp.GT) else b
        if 0 < cut < n:
            cuts.add(cut)
    if not cuts or len(cuts) >= MAX_PIECES:
        return None
    ends = [0, *sorted(cuts), n]
    return [(lo, hi, _settle(body, {e: _SETTLED[op](lo, hi, b)[0]
                                    for e, (op, b) in tests.items()}, v, lo, hi))
            for lo, hi in zip(ends, ends[1:])]


def _settle(body, known: dict, v, lo: int, hi: int):
    """`body` for v in [lo, hi): comparisons replaced by their value there, selects on them
    resolved, and min/max in indices decided where v's range settles them."""
    memo: dict = {}

    def walk(e):
        if e in memo:
            return memo[e]
        if e in known:
            out = Constant(bool(known[e]), DType.bool)
        elif isinstance(e, Where):
            cond = walk(e.cond)
            if isinstance(cond, Constant):
                out = walk(e.a) if cond.value else walk(e.b)
            else:
                out = Where(cond, walk(e.a), walk(e.b), e.dtype)
        elif isinstance(e, Load):
            out = with_index(e, tuple(_clamps_settled(sympy.sympify(i), v, lo, hi)
                                      for i in e.index))
        else:
            kids = children(e)
            out = rebuild(e, tuple(walk(k) for k in kids)) if kids else e
        memo[e] = out
        return out

    return walk(body)


def _clamps_settled(e, v, lo: int, hi: int):
    """Index `e` with each min/max whose arguments' order is fixed for v in [lo, hi) replaced
    by the smaller/larger argument (arguments linear in v alone: decided at both ends)."""
    def fold(x):
        args = list(x.args)
        best = args[0]
        for a in args[1:]:
            diff = sympy.expand(a - best)
            if diff.free_symbols - {v} or (diff.has(v) and sympy.degree(diff, v) > 1):
                return x
            ends = [diff.subs(v, lo), diff.subs(v, hi - 1)]
            if all(d <= 0 for d in ends):  # a <= best over the range
                best = a if isinstance(x, sympy.Min) else best
            elif all(d >= 0 for d in ends):
                best = best if isinstance(x, sympy.Min) else a
            else:
                return x
        return best

    if not e.has(v):
        return e
    return e.replace(lambda x: isinstance(x, (sympy.Min, sympy.Max)), fold)


def transpose_axes(body, iv, sizes, buffer_sizes: dict) -> tuple[int, int] | None:
    """(a, b): the last two non-unit output axes, when no input is read contiguously along
    the last one (b) but some input is read along a contiguously and along b with a stride
    (a transpose of the two); None otherwise."""
    axes = [k for k, n in enumerate(sizes) if n != 1]
    if len(axes) < 2:
        return None
    body_loads = loads(body)
    if not body_loads or any(not isinstance(ld, Load) for ld in body_loads):
        return None
    a, b = axes[-2], axes[-1]
    offsets = [flat_offset(ld.index, buffer_sizes[ld.buffer]) for ld in body_loads]
    if any(unit_stride(off, iv[b]) for off in offsets):
        return None
    transposed = any(unit_stride(off, iv[a]) and iv[b] in sympy.sympify(off).free_symbols
                     for off in offsets)  # not a broadcast along b
    return (a, b) if transposed else None


def _divides_exactly(q) -> bool:
    """`q` (a size divided by a factor) is an integer for every value of the symbols."""
    if q.is_number:
        return bool(q.is_Integer)
    try:
        return all(c.is_Integer for c in sympy.Poly(q, *sorted(q.free_symbols, key=str)).coeffs())
    except sympy.PolynomialError:
        return False


def column_axis(op: Reduction, sizes, rv, buffer_sizes: dict, loops: Loops) -> int | None:
    """The output axis to vectorize a reduction along instead of its reduced axis: the last
    non-unit output axis, when some input is read contiguously along it and none is read
    contiguously along the innermost reduced axis (None: reduce along the row)."""
    if op.reduce_type in ARG_REDUCTIONS or not rv:
        return None
    axes = [k for k, n in enumerate(sizes) if n != 1]
    if not axes:
        return None
    body_loads = loads(op.body)
    if not body_loads or any(not isinstance(ld, Load) for ld in body_loads):
        return None
    offsets = [flat_offset(ld.index, buffer_sizes[ld.buffer]) for ld in body_loads]
    var = index_vars(len(sizes))[axes[-1]]
    short = small_window(op, loops)
    merged = merge_reduced_axes(op, buffer_sizes) if short else None
    if short and (merged is None or small_window(merged[0], loops)):
        # rows too short to fill the lanes (a pooling window): vectorize along the output
        return axes[-1] if all(var in sympy.sympify(off).free_symbols for off in offsets) else None
    if any(unit_stride(off, rv[-1]) for off in offsets):
        return None
    return axes[-1] if any(unit_stride(off, var) for off in offsets) else None


def small_window(op: Reduction, loops: Loops) -> bool:
    """A reduction over a few elements per output (a pooling window): static ranges of at
    most loops.window elements in all, the innermost one shorter than loops.lanes, so a lane reduction
    would spend its time in the tail and in folding its lanes."""
    if not all(sympy.sympify(r).is_number for r in op.ranges):
        return False
    return int(op.ranges[-1]) < loops.lanes and int(numel(op.ranges)) <= loops.window


def _paren_index(e) -> str:
    text = c_index(e)
    return text if sympy.sympify(e).is_Atom else f"({text})"


def unit_stride(offset, var) -> bool:
    """`offset` steps by exactly one element as `var` does (a linear term `var`)."""
    e = sympy.expand(offset)
    if var not in e.free_symbols:
        return False
    rest = e - var
    return var not in sympy.expand(rest).free_symbols


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


def parallel_pragma(work, collapse: int, loops: Loops, extra: str = "") -> str:
    """The OpenMP pragma for a loop nest doing `work`, or "" when it is surely too small."""
    work = sympy.sympify(work)
    if work.is_number and work < loops.parallel_min_work:
        return ""
    clause = f" collapse({collapse})" if collapse > 1 else ""
    cond = "" if work.is_number else f" if({c_index(work)} >= {loops.parallel_min_work})"
    return f"#pragma omp parallel for{clause}{extra}{cond}"
