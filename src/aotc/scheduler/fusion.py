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

from ..ir.binding import binding_buffers
from ..ir.control import loop_buffers, predicate_buffers
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
from ..ir.nodes import Origin, Pointwise, Program, Reduction, Template
from ..ir.queries import body_of
from ..ir.symbols import index_vars, numel, reduction_var


def count_reads(program: Program) -> tuple[Counter, set[str]]:
    """(loads of each buffer in loop bodies, buffers that must stay materialized)."""
    uses: Counter = Counter()
    pinned: set[str] = (set(program.outputs) | set(program.updates.values())
                        | predicate_buffers(program.guards) | loop_buffers(program.loops)
                        | binding_buffers(program))
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
    body = buf.op.body
    identity = index_vars(len(buf.sizes))
    for ld in loads(body):
        src = program.buffers.get(ld.buffer)
        if (src is None or not isinstance(src.op, Template) or not isinstance(ld, Load)
                or ld.index != identity or uses[src.name] != 1 or src.name in pinned
                or len(src.sizes) != len(buf.sizes)
                or any(sympy.expand(a - b) != 0 for a, b in zip(src.sizes, buf.sizes))
                or program.guards.get(src.name, ()) != program.guards.get(buf.name, ())):
            continue
        return src.name
    return None


def fuse_epilogues(program: Program) -> Program:
    """Move each pointwise buffer that alone reads a template's result, element for
    element, into that template as its epilogue; the template then writes the pointwise
    buffer, and its own result is never stored."""
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
