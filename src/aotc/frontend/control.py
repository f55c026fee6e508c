"""torch.cond: both branches are imported into the one program, every buffer a branch
creates guarded by its predicate (ir/control.py); the run evaluates the predicate and
runs only the kernels of the branch it picks, and each result selects that branch's value.
torch.while_loop: the cond's and body's buffers are guarded by the loop, whose kernels the
run repeats while the predicate holds, copying the body's results into the carries."""
from __future__ import annotations

import sympy
import torch
from torch.utils._sympy.symbol import SymT, symbol_is_type

from ..dtypes import DType
from ..errors import CompileError, UnsupportedOperatorError
from ..ir.control import Guard, Loop
from ..ir.expr import IndexValue, Load, Node, Where, cast, constant
from ..ir.symbols import index_vars
from ..lowering import LoweringContext, TensorValue
from .graphs import bound_weights, import_graph
from .source import user_source
from .symbolic import symbolic_condition

COND = torch.ops.higher_order.cond
WHILE = getattr(torch.ops.higher_order, "while_loop", None)
LOOPS = tuple(op for op in (getattr(torch.ops.higher_order, "map_impl", None),)
              if op is not None)


def import_cond(imp, node: torch.fx.Node) -> tuple:
    """The results of `torch.cond(pred, true_fn, false_fn, operands)`."""
    where = user_source(node.meta.get("stack_trace"))
    pred_arg, true_gm, false_gm, operands = node.args
    pred = imp.arg(pred_arg)
    program = imp.program
    ops = [imp.arg(a) for a in operands]
    if isinstance(pred, (bool, sympy.logic.boolalg.BooleanAtom)):  # decided at compile time
        return tuple(import_subgraph(imp, imp.env[true_gm if bool(pred) else false_gm], ops))
    if isinstance(pred, TensorValue):
        ctx = LoweringContext(program, f"{node.name}_pred", "cond predicate", (), DType.bool,
                              where)
        flag = ctx.pointwise(cast(pred.load((0,) * pred.ndim), DType.bool), ()).buffer_name()
        assert flag is not None
        _guard_new(imp, {flag})
        predicate: str | sympy.Basic = flag
        condition: Node = Load(flag, (), DType.bool)
    elif isinstance(pred, sympy.Basic):
        predicate, condition = pred, symbolic_condition(pred, f"{node.name} predicate")
    else:
        raise CompileError(f"torch.cond at {where}: a predicate of type {type(pred).__name__}")
    results = {}
    for value, gm in ((True, true_gm), (False, false_gm)):
        imp.guards.append(Guard(predicate, value))
        before = set(program.buffers)
        try:
            results[value] = import_subgraph(imp, imp.env[gm], ops)
        finally:
            _guard_new(imp, set(program.buffers) - before)
            imp.guards.pop()
    val = node.meta.get("val")
    metas = val if isinstance(val, (tuple, list)) else (val,)
    out = []
    for k, (t, f) in enumerate(zip(results[True], results[False])):
        if not (isinstance(t, TensorValue) and isinstance(f, TensorValue)):
            raise UnsupportedOperatorError("torch.cond", where, "a branch returns a non-tensor")
        if t.ndim != f.ndim or t.dtype != f.dtype:
            raise UnsupportedOperatorError("torch.cond", where, f"output {k}: the branches "
                                           f"differ in rank or dtype ({t.sizes} {t.dtype.name}"
                                           f" vs {f.sizes} {f.dtype.name})")
        sizes = _result_sizes(imp, t, f, metas[k] if k < len(metas) else None, condition,
                              where)
        ctx = LoweringContext(program, f"{node.name}_out{k}", "cond", sizes, t.dtype, where)
        before = set(program.buffers)
        out.append(ctx.pointwise(Where(condition, _within(t, sizes), _within(f, sizes),
                                       t.dtype), sizes))
        _guard_new(imp, set(program.buffers) - before)
    return tuple(out)


def _result_sizes(imp, t: TensorValue, f: TensorValue, meta, condition: Node,
                  where: str) -> tuple:
    """The sizes of a cond result. Where the branches' sizes differ, export names the
    result's size with a fresh unbacked symbol: it is bound to the taken branch's size
    (during the run when the predicate is a tensor, ir/binding.py)."""
    from .importer import to_sympy  # importer.py imports this module

    sizes = list(t.sizes)
    given = [to_sympy(d) for d in meta.shape] if isinstance(meta, torch.Tensor) else []
    for d, (a, b) in enumerate(zip(t.sizes, f.sizes)):
        a, b = sympy.sympify(a), sympy.sympify(b)
        if a == b:
            continue
        symbol = given[d] if d < len(given) else None
        if not (isinstance(symbol, sympy.Symbol) and symbol_is_type(symbol, SymT.UNBACKED_INT)):
            raise UnsupportedOperatorError("torch.cond", where, f"the branches' sizes {a} and "
                                           f"{b} differ and export gave the result no size "
                                           "symbol of its own")
        if symbol not in imp.program.item_symbols:
            imp.program.item_symbols[symbol] = Where(
                condition, IndexValue(a, DType.int64), IndexValue(b, DType.int64), DType.int64)
            imp.program.symbols.setdefault(symbol, (0, None))
        sizes[d] = symbol
    return tuple(sizes)


def _within(v: TensorValue, sizes: tuple) -> Node:
    """`v`'s value at each position of a result of `sizes`: positions past v's own size
    (the other branch is larger) read v's last element, never outside it; the select
    leaves them unused. A branch with no elements is a zero."""
    if any(sympy.sympify(n) == 0 for n in v.sizes):
        return constant(0, v.dtype)
    index = [i if sympy.sympify(n) == sympy.sympify(m) else sympy.Min(i, n - 1)
             for i, n, m in zip(index_vars(len(sizes)), v.sizes, sizes)]
    return v.load(tuple(index))


def _guard_new(imp, names: set[str]) -> None:
    """Buffers created just now run under the guards in force (inner ones set theirs first)."""
    if imp.guards:
        for name in names:
            imp.program.guards.setdefault(name, tuple(imp.guards))


def import_subgraph(imp, gm: torch.fx.GraphModule, operands: list) -> list:
    """Lower a branch's graph with its placeholders bound to `operands`; its outputs."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(operands):
        raise CompileError(f"a torch.cond branch takes {len(placeholders)} operands, given "
                           f"{len(operands)}")
    for ph, v in zip(placeholders, operands):
        imp.env[ph] = v
    # the same path as the top level's nodes: freezing, attention templates, lowerings
    import_graph(imp, gm.graph, bound_weights(imp, placeholders, operands))
    for n in gm.graph.nodes:
        if n.op == "output":
            outs = n.args[0]
            return [imp.arg(a) for a in (outs if isinstance(outs, (list, tuple)) else [outs])]
    raise CompileError("a torch.cond branch or torch.while_loop function has no output")


def import_while(imp, node: torch.fx.Node) -> tuple:
    """The carried values after `torch.while_loop(cond_fn, body_fn, carried, additional)`:
    carries copied from the initial values, then a loop (ir/control.py) whose kernels are
    the cond's and the body's, guarded by the loop."""
    where = user_source(node.meta.get("stack_trace"))
    cond_gm, body_gm, carried, additional = node.args
    program = imp.program
    extra = [imp.arg(a) for a in additional]
    carries = []
    for k, v in enumerate(imp.arg(a) for a in carried):
        if not isinstance(v, TensorValue):
            raise UnsupportedOperatorError("torch.while_loop", where, "a carried value is not "
                                           "a tensor")
        ctx = LoweringContext(program, f"{node.name}_carry{k}", "while_loop", v.sizes, v.dtype,
                              where)
        before = set(program.buffers)
        carries.append(ctx.pointwise(v.body, v.sizes))
        _guard_new(imp, set(program.buffers) - before)
    pctx = LoweringContext(program, f"{node.name}_pred", "while_loop predicate", (), DType.bool,
                           where)
    predicate = pctx.fresh_name()
    imp.guards.append(Guard(predicate, True, loop=True))
    before = set(program.buffers)
    try:
        (pv,) = import_subgraph(imp, imp.env[cond_gm], carries + extra)
        if not isinstance(pv, TensorValue):
            raise UnsupportedOperatorError("torch.while_loop", where, "the condition is not a "
                                           "tensor")
        flag = pctx.pointwise(cast(pv.load((0,) * pv.ndim), DType.bool), (), hint=predicate)
        assert flag.buffer_name() == predicate
        nexts = []
        outs = import_subgraph(imp, imp.env[body_gm], carries + extra)
        for k, (o, c) in enumerate(zip(outs, carries)):
            if not isinstance(o, TensorValue) or tuple(o.sizes) != tuple(c.sizes):
                raise UnsupportedOperatorError("torch.while_loop", where, f"carried value {k} "
                                               "changes shape in the body")
            ctx = LoweringContext(program, f"{node.name}_next{k}", "while_loop", c.sizes,
                                  c.dtype, where)
            nexts.append(ctx.pointwise(cast(o.body, c.dtype), c.sizes).buffer_name())
    finally:
        _guard_new(imp, set(program.buffers) - before)
        imp.guards.pop()
    program.loops.append(Loop(predicate, tuple(c.buffer_name() for c in carries), tuple(nexts)))
    return tuple(carries)
