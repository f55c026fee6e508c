"""Access-pattern analyses of loop bodies that the loop planner (scheduler/loops.py) chooses
nests from: axes read through a division (split), transposed reads (tiles), a cat's
comparisons (cut axes), contiguous output axes of a reduction (columns), mergeable reduced
axes. Each reads the IR; none prints C++."""
from __future__ import annotations

import sympy

from ..dtypes import DType
from ..ir.expr import (
    Binary,
    BinaryOp,
    Constant,
    IndexValue,
    Load,
    Where,
    children,
    loads,
    nodes,
    rebuild,
    simplify_loads,
    substitute_index,
    transform,
    with_index,
)
from ..ir.nodes import ARG_REDUCTIONS, ReduceType, Reduction
from ..ir.symbols import FloorDiv, ModIndex, flat_offset, index_vars, numel, reduction_var, simplify_index
from ..target import Loops


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
    """Every node of a body's DAG, once each."""
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


# reductions whose result does not depend on how the elements are grouped into lanes
ORDER_FREE = frozenset({ReduceType.MAX, ReduceType.MIN, ReduceType.ANY, ReduceType.ALL})


def split_reduced_axis(op: Reduction, dtype: DType) -> Reduction | None:
    """op with its innermost reduced axis r looped as (r // c, r % c) when the loads read it
    through // c and % c (an amax over a permuted view: the loads then run along memory, not
    a division per element), for reductions whose result the new grouping of elements into
    lanes cannot change (max, min, any, all; sums of integers). The elements are visited in
    the same order. None when nothing splits."""
    if op.reduce_type not in ORDER_FREE and (dtype.is_floating or dtype.is_complex
                                             or op.reduce_type not in (ReduceType.SUM,
                                                                       ReduceType.PROD)):
        return None
    rv = [reduction_var(k) for k in range(len(op.ranges))]
    if not rv or op.ranges[-1] == 1:
        return None
    found = split_inner_axis(op.body, rv, op.ranges)
    if found is None:
        return None
    k, c, body = found
    outer, inner = split_vars(rv[k])
    body = substitute_index(body, {outer: rv[k], inner: reduction_var(k + 1)})
    return Reduction(op.reduce_type, (*op.ranges[:k], sympy.cancel(op.ranges[k] / c), c),
                     body)


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
    tests = {e: t for e in _nodes(body) if (t := _compares_axis(e, v)) is not None}
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


def merge_inner_axes(body, iv, sizes, sizes_of: dict) -> tuple | None:
    """(sizes, body) with the last two non-unit axes a < b looped as one, when every load
    reads them as the trailing pair of dims of its (contiguous) buffer, dim b of the same
    size, and nothing else in the body uses them: b then runs over sizes[a] * sizes[b]
    elements and a is fixed at 0 (each such load's dim a index 0, its dim b index the
    merged count: the same flat offsets). A [C, H, W] epilogue whose loads read [C, H, W]
    buffers and [C] scales thus loops over C and H*W, a vector loop of H*W elements
    instead of W (7 at the end of a ResNet). None when the axes cannot merge."""
    axes = [k for k, n in enumerate(sizes) if n != 1]
    if len(axes) < 2:
        return None
    a, b = axes[-2], axes[-1]
    va, vb = iv[a], iv[b]
    rewritten: dict = {}
    for ld in loads(body):
        if not isinstance(ld, Load):
            return None
        index = [sympy.sympify(e) for e in ld.index]
        uses = [d for d, e in enumerate(index) if e.has(va) or e.has(vb)]
        if not uses:
            continue
        shape = sizes_of.get(ld.buffer)
        if shape is None or len(uses) != 2 or uses[1] != uses[0] + 1 or \
                index[uses[0]] != va or index[uses[1]] != vb or \
                sympy.simplify(sympy.sympify(shape[uses[1]]) - sizes[b]) != 0:
            return None
        index[uses[0]] = sympy.Integer(0)
        rewritten[ld] = with_index(ld, tuple(index))

    if not rewritten or _uses_outside_loads(body, (va, vb)):
        return None
    merged = list(sizes)
    merged[b] = sympy.expand(sympy.sympify(sizes[a]) * sizes[b])
    merged[a] = sympy.Integer(1)
    return merged, transform(body, lambda x: rewritten.get(x, x))


def _uses_outside_loads(body, symbols) -> bool:
    """Whether an IndexValue of `body` (a position used as a value) mentions `symbols`."""
    return any(isinstance(x, IndexValue) and any(x.expr.has(v) for v in symbols)
               for x in nodes(body))


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


def unit_stride(offset, var) -> bool:
    """`offset` steps by exactly one element as `var` does (a linear term `var`)."""
    e = sympy.expand(offset)
    if var not in e.free_symbols:
        return False
    rest = e - var
    return var not in sympy.expand(rest).free_symbols
