"""Fusion: which pointwise buffers are inlined into their consumers' loops.

Lowering makes every op a buffer; here a pointwise buffer read by exactly one load (or a
cheap one, such as a scale, read by several) disappears into its readers' bodies, so a
chain such as add -> relu -> mul, or exp feeding a sum, runs as one loop nest, unless that
one load runs more often than the buffer has elements (a pooling window, a convolution's
patches: each element read once per tap would be computed once per tap). Then a
pointwise buffer that is the only reader of a template's result, element for element,
becomes that template's epilogue (bias + GELU, a residual add after a GEMM), if the
template takes one (Template.with_epilogue).
"""
from __future__ import annotations

from collections import Counter

import sympy

from ..ir.expr import (
    SPECIAL_UNARY,
    IndirectLoad,
    Load,
    Node,
    Unary,
    UnaryOp,
    children,
    loads,
    simplify_loads,
    substitute_index,
    transform,
)
from ..ir.nodes import Buffer, BufferKind, Origin, Pointwise, Program, Reduction, Template
from ..ir.queries import body_of, held_buffers
from ..ir.symbols import index_vars, numel, reduction_var


def count_reads(program: Program) -> tuple[Counter, set[str]]:
    """(loads of each buffer in loop bodies, buffers that must stay materialized)."""
    uses: Counter = Counter()
    pinned = held_buffers(program)
    for buf in program.computed():
        body = body_of(buf.op)
        if body is not None:
            for ld in loads(body):
                uses[ld.buffer] += 1
                if isinstance(ld, IndirectLoad):  # a data-dependent index: read it in place
                    pinned.add(ld.buffer)
        elif isinstance(buf.op, Template):  # a kernel reads its operands in place
            pinned.update(buf.op.reads())
    return uses, pinned


def merge_origins(*origins: Origin | None) -> Origin | None:
    """One origin naming every ATen node that a fused kernel computes, in program order."""
    nodes: dict[tuple[str, str], None] = {}
    source = ""
    for o in origins:
        if o is None:
            continue
        for n, t in zip(o.nodes, o.targets):
            nodes[(n, t)] = None
        source = source or o.source
    if not nodes:
        return None
    return Origin(tuple(n for n, _ in nodes), tuple(t for _, t in nodes), source)


# ops whose recomputation per reader could cost more than storing the result once
EXPENSIVE = frozenset({UnaryOp.EXP, UnaryOp.EXPM1, UnaryOp.LOG, UnaryOp.LOG1P, UnaryOp.ERF,
                       UnaryOp.TANH, UnaryOp.SIGMOID, UnaryOp.SIN, UnaryOp.COS, UnaryOp.SQRT,
                       UnaryOp.RSQRT, UnaryOp.TAN, UnaryOp.ASIN, UnaryOp.ACOS, UnaryOp.ATAN,
                       UnaryOp.SINH, UnaryOp.COSH, UnaryOp.ASINH, UnaryOp.ACOSH, UnaryOp.ATANH,
                       UnaryOp.EXP2, UnaryOp.LOG2, UnaryOp.LOG10}) | SPECIAL_UNARY
MAX_RECOMPUTE_OPS = 2


def cheap_to_recompute(body: Node) -> bool:
    """A body of at most a couple of arithmetic ops on at most two loads: computing it again
    in each reader is cheaper than writing it to memory and reading it back."""
    ops, n_loads = 0, 0
    seen: set = set()
    stack = [body]
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        if isinstance(e, (Load, IndirectLoad)):
            n_loads += 1
        elif isinstance(e, Unary) and e.op in EXPENSIVE:
            return False
        elif children(e):
            ops += 1
        stack.extend(children(e))
    return ops <= MAX_RECOMPUTE_OPS and n_loads <= 2 and not any(
        isinstance(e, IndirectLoad) for e in seen)


# a reader's loop nest this many times larger than the buffer it reads recomputes it
AMPLIFIED = 1.25


def amplified_reads(program: Program) -> set[str]:
    """Pointwise buffers that a reader's loop nest (its sizes times its reduction ranges)
    loads more often than they have elements, both counts known at compile time."""
    out: set[str] = set()
    for buf in program.computed():
        body = body_of(buf.op)
        if body is None:
            continue
        domain = numel(buf.sizes)
        if isinstance(buf.op, Reduction):
            domain = domain * numel(tuple(sympy.sympify(r) for r in buf.op.ranges))
        domain = sympy.sympify(domain)
        for ld in loads(body):
            src = program.buffers.get(ld.buffer)
            if src is None or not isinstance(src.op, Pointwise):
                continue
            size = sympy.sympify(numel(src.sizes))
            if domain.is_Integer and size.is_Integer and domain > AMPLIFIED * size:
                out.add(src.name)
    return out


def _guard_boundaries(program: Program) -> set[str]:
    """Buffers of a torch.cond branch read outside it: inlined there they would run
    whichever branch is taken (and fail on what the branch not taken would fail on)."""
    if not program.guards:
        return set()
    out: set[str] = set()
    for buf in program.computed():
        body = body_of(buf.op)
        reads = {ld.buffer for ld in loads(body)} if body is not None else set()
        mine = program.guards.get(buf.name, ())
        for name in reads:
            theirs = program.guards.get(name, ())
            if mine[:len(theirs)] != theirs:
                out.add(name)
    return out


def fuse_pointwise(program: Program) -> Program:
    """Inline pointwise buffers into the loops that read them: those with one reader, and
    cheap ones (a scale, a shift) whatever their readers. Returns a new program."""
    program = program.with_own_buffers()
    uses, pinned = count_reads(program)
    pinned |= _guard_boundaries(program)
    amplified = amplified_reads(program)
    inlined: dict[str, Node] = {}
    origins: dict[str, Origin | None] = {}

    def inline_loads(body: Node, used: list) -> Node:
        def leaf(x: Node) -> Node:
            if isinstance(x, Load) and x.buffer in inlined:
                used.append(origins[x.buffer])
                src = inlined[x.buffer]
                return substitute_index(src, dict(zip(index_vars(len(x.index)), x.index)))
            return x
        return transform(body, leaf)

    for buf in program.computed():
        with buf.compiling("fusing"):
            op = buf.op
            used: list = []
            ranges = dict(zip(index_vars(len(buf.sizes)), buf.sizes))
            if isinstance(op, Pointwise):
                op = buf.op = Pointwise(simplify_loads(inline_loads(op.body, used), ranges))
            elif isinstance(op, Reduction):
                ranges.update((reduction_var(k), n) for k, n in enumerate(op.ranges))
                body = simplify_loads(inline_loads(op.body, used), ranges)
                op = buf.op = Reduction(op.reduce_type, op.ranges, body)
            buf.origin = merge_origins(*used, buf.origin)
            if (isinstance(op, Pointwise) and buf.name not in pinned
                    and ((uses[buf.name] <= 1 and buf.name not in amplified)
                         or cheap_to_recompute(op.body))):
                inlined[buf.name] = op.body
                origins[buf.name] = buf.origin
    for name in inlined:
        del program.buffers[name]
    return fuse_epilogues(program)


def _epilogue_source(program: Program, buf, uses: Counter, pinned: set[str]) -> str | None:
    """The template buffer whose result `buf` (pointwise) reads element for element and
    alone, so that `buf` can run as that template's epilogue; else None."""
    for name in _template_results(program, buf.op.body, buf.sizes, uses, pinned):
        if program.guards.get(name, ()) == program.guards.get(buf.name, ()):
            return name
    return None


def _template_results(program: Program, body: Node, sizes, uses: Counter,
                      pinned: set[str]) -> list[str]:
    """The template results `body` (over `sizes`) could run as the epilogue of, in the
    order it loads them: read at its own index, whole, by it only."""
    identity = index_vars(len(sizes))
    out: dict[str, None] = {}
    for ld in loads(body):
        src = program.buffers.get(ld.buffer)
        if (src is not None and isinstance(src.op, Template) and isinstance(ld, Load)
                and ld.index == identity and uses[src.name] == 1 and src.name not in pinned
                and len(src.sizes) == len(sizes)
                and all(sympy.expand(a - b) == 0 for a, b in zip(src.sizes, sizes))):
            out[src.name] = None
    return list(out)


def _narrowed_parts(program: Program, body: Node, order: list[str]) -> dict[Node, str]:
    """The largest parts of `body` that read one of the sources in `order` and no other,
    each stored narrower than that source's elements (the 8-bit requantize of int32 sums),
    with that source; one part per source at most, and one source left whole (the first
    where each has its part: the body runs as that one's epilogue)."""
    sources = set(order)
    reads: dict[Node, frozenset[str]] = {}
    stack = [(body, False)]
    while stack:  # the sources each node's subtree reads, children first
        e, done = stack.pop()
        if e in reads:
            continue
        if not done:
            stack.append((e, True))
            stack.extend((c, False) for c in children(e))
            continue
        own = {e.buffer} & sources if isinstance(e, Load) else set()
        reads[e] = frozenset(own).union(*(reads[c] for c in children(e)))
    parts: dict[Node, str] = {}
    todo = [body]
    while todo:
        e = todo.pop()
        got = reads[e]
        if (len(got) == 1 and not isinstance(e, (Load, IndirectLoad))
                and e.dtype.itemsize < program.buffers[next(iter(got))].dtype.itemsize):
            parts.setdefault(e, next(iter(got)))
        else:
            todo.extend(children(e))
    per_source = Counter(parts.values())
    parts = {part: src for part, src in parts.items() if per_source[src] == 1}
    if not sources - set(parts.values()):
        parts = {part: src for part, src in parts.items() if src != order[0]}
    return parts


def split_narrowed_results(program: Program, uses: Counter, pinned: set[str]) -> None:
    """A pointwise body that reads two template results can run as the epilogue of one of
    them only; the other's sums would be stored whole (int32) for it. Where the body narrows
    that other result on its own (a requantize to 8 bits: a residual branch's convolution
    before the add), that narrowed part becomes a buffer of its own, which fusion then runs
    as that template's epilogue: the kernel stores bytes, and the body reads them."""
    for buf in list(program.computed()):
        if not isinstance(buf.op, Pointwise):
            continue
        order = _template_results(program, buf.op.body, buf.sizes, uses, pinned)
        parts = _narrowed_parts(program, buf.op.body, order) if len(order) > 1 else {}
        if not parts:
            continue
        loads_of: dict[Node, Node] = {}
        buffers = {}
        for name, other in program.buffers.items():
            if name == buf.name:  # the parts go just before the body that read them
                for part, src in parts.items():
                    new = Buffer(program.fresh_name(f"{src}_narrowed"), part.dtype, buf.sizes,
                                 BufferKind.COMPUTED, Pointwise(part),
                                 program.buffers[src].origin)
                    buffers[new.name] = new
                    loads_of[part] = Load(new.name, index_vars(len(buf.sizes)), part.dtype)
                    if buf.name in program.guards:  # it runs where its reader runs
                        program.guards = {**program.guards,
                                          new.name: program.guards[buf.name]}
            buffers[name] = other
        program.buffers = buffers
        buf.op = Pointwise(transform(buf.op.body, lambda x: x, memo=loads_of))


def fuse_epilogues(program: Program) -> Program:
    """Move each pointwise buffer that alone reads a template's result, element for
    element, into that template as its epilogue; the template then writes the pointwise
    buffer, and its own result is never stored."""
    uses, pinned = count_reads(program)
    split_narrowed_results(program, uses, pinned)
    uses, pinned = count_reads(program)
    for buf in program.computed():
        if not isinstance(buf.op, Pointwise):
            continue
        with buf.compiling("fusing"):
            source = _epilogue_source(program, buf, uses, pinned)
            if source is None:
                continue
            src = program.buffers[source]
            assert isinstance(src.op, Template)
            fused = src.op.with_epilogue(source, buf.op.body)
        if fused is None:
            continue
        buf.op = fused
        buf.origin = merge_origins(src.origin, buf.origin)
        del program.buffers[source]
    return program
