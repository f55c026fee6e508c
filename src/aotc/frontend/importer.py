"""Turn a torch.export ExportedProgram into a loop-level IR Program.

Walks the exported graph node by node: placeholders become inputs or constants, every
call becomes the registered lowering of its ATen op. In-place ops are made functional on
the way (`relu_` lowers as `relu` and rebinds its target); ops with no lowering are
decomposed per node (see decompose.py). No whole-graph re-trace happens.
"""
from __future__ import annotations

import operator
from typing import Any

import sympy
import torch
from torch.export.graph_signature import InputKind, OutputKind
from torch.utils._sympy.symbol import SymT, symbol_is_type

from ..dtypes import COMPUTABLE, DType
from ..errors import AotcError, CompileError, UnsupportedOperatorError
from ..ir.expr import IndexValue, Load, cast
from ..ir.nodes import Buffer, BufferKind, ConstantSpec, InputSpec, OutputLeaf, Program
from ..ir.symbols import (
    UNBOUNDED_BELOW,
    always_holds,
    contiguous_strides,
    index_vars,
    negation,
)
from ..lowering import LoweringContext, TensorValue, buffer_value, lookup
from ..lowering.opmath import involves_half, lower_in_float
from ..lowering.registry import Decompose
from .complex import (
    add_pairs_buffer,
    complex_dtype,
    import_complex,
    involves_complex,
    is_complex_value,
    pairs_of,
)
from .control import COND, LOOPS, WHILE, import_cond, import_while
from .decompose import decompose_node, traced_args
from .freezing import weight_placeholders
from .graphs import import_graph
from .guards import add_assertion, import_input_guards
from .mutation import base_buffer, update_in_place
from .ranges import widen_size_ranges
from .source import user_source
from .subclass import (
    ACCESS,
    SubclassWeight,
    flatten_weight,
    inner_part,
    inner_weights,
    is_subclass,
    refuse_whole_subclass,
)
from .symbolic import ITEM_OPS, import_item, import_symbolic_int, symbolic_output


def to_sympy(v) -> sympy.Expr:
    if isinstance(v, (torch.SymInt, torch.SymBool, torch.SymFloat)):
        return _aotc_functions(sympy.sympify(v.node.expr))
    return sympy.sympify(v)


def _aotc_functions(e: sympy.Expr) -> sympy.Expr:
    """torch's integer functions in shape expressions (a conv's (h - 1)//2 + 1) as the IR's
    own, which codegen knows how to write; sizes are non-negative, so floor division and
    modulo agree with the index forms."""
    from torch.utils._sympy import functions as tf

    from ..ir.symbols import FloorDiv, ModIndex

    if not isinstance(e, sympy.Basic) or e.is_number:
        return e
    table = {tf.FloorDiv: FloorDiv, tf.CleanDiv: FloorDiv, tf.Mod: ModIndex,
             tf.PythonMod: ModIndex, tf.Max: sympy.Max, tf.Min: sympy.Min,
             tf.CeilDiv: lambda a, b: FloorDiv(a + b - 1, b), tf.PowByNatural: sympy.Pow}
    for cls, fn in table.items():
        if e.has(cls):
            e = e.replace(cls, fn)
    return e


def meta_sizes(val) -> tuple:
    return tuple(to_sympy(s) for s in val.shape)


def meta_dtype(val, what: str = "a tensor") -> DType:
    try:
        d = DType.from_name(str(val.dtype))
    except ValueError:
        d = None
    if d not in COMPUTABLE:
        raise CompileError(f"{what} has dtype {val.dtype}, which aotc does not compute yet "
                           f"(supported: {', '.join(sorted(x.name for x in COMPUTABLE))})")
    return d


def _meta_output(val, what: str) -> tuple:
    """(sizes, dtype) of a node's tensor value in the IR: a complex one as its real pairs."""
    if val.dtype.is_complex:
        return (*meta_sizes(val), sympy.Integer(2)), complex_dtype(val.dtype, what).real
    return meta_sizes(val), meta_dtype(val, what)


# Shape and metadata assertions that export inserts: the generated input checks already
# guarantee what they assert, so they compile to nothing (an _assert_scalar's condition is
# recorded and checked at run time, frontend/guards.py).
MAX_DECOMPOSITION_DEPTH = 16  # a decomposition that keeps producing itself stops here
SHAPE_ASSERTIONS = frozenset({
    "aten._assert_tensor_metadata.default", "aten._assert_scalar.default",
    "aten.sym_constrain_range.default", "aten.sym_constrain_range_for_size.default",
})


class Importer:
    """State of one import: the program being built and each FX node's lowered value."""

    def __init__(self, ep: torch.export.ExportedProgram, freezing: bool = False,
                 chains: dict | None = None):
        self.ep = ep
        self.program = Program()
        self.env: dict[torch.fx.Node, Any] = {}
        self.buffer_targets: dict[str, str] = {}  # constant buffer -> buffer or lifted constant
        self.freezing = freezing
        self.chains = chains or {}  # templates found in the graph (passes/chains.py), by output
        # constant buffers that hold weights -> (value, the weights' names): what folds
        self.weights: dict[str, tuple[torch.Tensor, frozenset[str]]] = {}
        self.subgraph_names: dict[torch.fx.GraphModule, str] = {}
        self.guards: list = []  # the torch.cond branches being imported, outermost first
        self.decomposition_depth = 0  # decompositions being lowered inside each other

    # ---- placeholders --------------------------------------------------------------------
    def import_symbols(self) -> None:
        """Shape symbols and their [min, max]; ranges of derived expressions (2*s0) follow."""
        for s, vr in self.ep.range_constraints.items():
            s = _aotc_functions(sympy.sympify(s))
            lo = _bound(vr.lower)
            if s.is_Symbol:
                self.program.symbols[s] = (UNBOUNDED_BELOW if lo is None else lo, _bound(vr.upper))
            elif s.free_symbols:
                self.program.size_ranges[s] = (0 if lo is None else max(lo, 0), _bound(vr.upper))

    def import_placeholders(self) -> None:
        specs = {s.arg.name: s for s in self.ep.graph_signature.input_specs}
        for node in self.ep.graph.nodes:
            if node.op != "placeholder":
                continue
            spec = specs[node.name]
            val = node.meta.get("val")
            if spec.kind is InputKind.USER_INPUT:
                if isinstance(val, torch.SymInt) and to_sympy(val).is_Symbol:
                    self.env[node] = import_symbolic_int(self.program, node.name, to_sympy(val))
                    continue
                if not isinstance(val, torch.Tensor):
                    self.env[node] = to_sympy(val) if isinstance(val, (int, torch.SymInt)) else val
                    continue
                buf = self._placeholder_buffer(node, val, BufferKind.INPUT)
                self.program.inputs.append(InputSpec(node.name, buf.name))
            elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
                data = self._constant_data(spec)
                if is_subclass(data):  # torchao's quantized weights: their inner tensors
                    self.env[node] = flatten_weight(self.program, node.name, spec.target, data,
                                                    self.weights)
                    continue
                buf = self._placeholder_buffer(node, data, BufferKind.CONSTANT)
                host = pairs_of(data.detach().contiguous().cpu())
                self.program.constants.append(ConstantSpec(spec.target, buf.name, host))
                if spec.kind in (InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
                    self.buffer_targets[buf.name] = spec.target
            else:
                raise CompileError(f"input {node.name}: {spec.kind.name} inputs are not supported")
            self.env[node] = buffer_value(buf)

    def _state_origin(self, buffer: str) -> str | None:
        """The registered buffer's or lifted constant's name if constant `buffer` is one: updated
        in place, it becomes state."""
        return self.buffer_targets.get(buffer)

    def _constant_data(self, spec) -> torch.Tensor:
        if spec.target in self.ep.state_dict:
            return self.ep.state_dict[spec.target]
        if spec.target in self.ep.constants:
            c = self.ep.constants[spec.target]
            if isinstance(c, torch.Tensor):
                return c
        raise CompileError(f"constant {spec.target} is not a tensor aotc can store")

    def _placeholder_buffer(self, node, val, kind: BufferKind) -> Buffer:
        sizes = meta_sizes(val) if kind is BufferKind.INPUT else tuple(
            sympy.Integer(s) for s in val.shape)
        name = "in_" + node.name if kind is BufferKind.INPUT else "c_" + node.name
        if val.dtype.is_complex:  # its real pairs (frontend/complex.py)
            return add_pairs_buffer(self.program, name, val.dtype, sizes, kind)
        dtype = meta_dtype(val, f"input {node.name}")
        return self.program.add(Buffer(name, dtype, sizes, kind))

    # ---- calls ---------------------------------------------------------------------------
    def arg(self, a):
        if isinstance(a, torch.fx.Node):
            return self.env[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self.arg(x) for x in a)
        if isinstance(a, torch.SymInt):
            return to_sympy(a)
        return a

    def import_call(self, node: torch.fx.Node) -> None:
        val = node.meta.get("val")
        if str(node.target) == "aten._assert_scalar.default" and not self.guards:
            condition = self.arg(node.args[0])
            if isinstance(condition, sympy.Basic):  # a torch._check the ranges may not imply
                add_assertion(self.program, condition, _assertion_text(node))
            return
        if str(node.target) in SHAPE_ASSERTIONS:
            return
        if node.target is operator.getitem:
            self.env[node] = self.env[node.args[0]][node.args[1]]
            return
        if node.target is ACCESS and isinstance(self.env.get(node.args[0]), SubclassWeight):
            self.env[node] = inner_part(self.env[node.args[0]], node.args[1], node)
            return
        refuse_whole_subclass(node, [self.env.get(a) for a in node.all_input_nodes])
        if node.target is COND:
            self.env[node] = import_cond(self, node)
            return
        if WHILE is not None and node.target is WHILE:
            self.env[node] = import_while(self, node)
            return
        if node.target in LOOPS:
            raise UnsupportedOperatorError(str(node.target), user_source(
                node.meta.get("stack_trace")), "torch.map is not compiled yet")
        if node.target in ITEM_OPS and isinstance(val, torch.SymInt):
            self.env[node] = import_item(self.program, self.arg(node.args[0]), to_sympy(val),
                                         user_source(node.meta.get("stack_trace")) or node.name)
            return
        if node.target in ITEM_OPS:  # a float or bool .item() used as a value: a 0-dim tensor
            t = self.arg(node.args[0])
            self.env[node] = TensorValue((), t.dtype, t.load((0,) * t.ndim))
            if isinstance(val, torch.SymBool):  # export's Eq(u0, 1): u0 is the value as 0/1
                e = to_sympy(val)
                if isinstance(e, sympy.Eq) and e.args[0].is_Symbol and e.args[1] == 1:
                    as_int = TensorValue((), DType.int64, cast(self.env[node].body, DType.int64))
                    import_item(self.program, as_int, e.args[0],
                                user_source(node.meta.get("stack_trace")) or node.name)
            return
        if node.target is torch.ops.aten.sym_storage_offset.default:
            self.env[node] = self._storage_offset(node)
            return
        if node.target is torch.ops.aten.sym_size.int:
            self.env[node] = self._size(node)
            return
        if node.target in _COMPARISONS and isinstance(val, (torch.SymBool, bool)):
            self.env[node] = self._comparison(node)
            return
        if isinstance(val, (torch.SymInt, torch.SymBool, torch.SymFloat, int, float, bool)):
            value = to_sympy(val)  # shape arithmetic: its value is the expression
            if any(s.is_integer is not True for s in getattr(value, "free_symbols", ())):
                raise UnsupportedOperatorError(
                    str(node.target), user_source(node.meta.get("stack_trace")) or node.name,
                    "arithmetic on a float .item() value is not compiled yet; keep it a tensor "
                    "(t instead of t.item())")
            self.env[node] = value
            return
        op = node.target
        mutated = _mutated_arg(op)
        if mutated is not None and lookup(op) is not None:
            mutated = None  # a rule for the in-place op itself states its writes (ctx.writes)
        if mutated is not None:
            op = _functional_variant(op, node)
        before = set(self.program.buffers)
        rule = lookup(op)
        writes: dict[int, TensorValue] = {}
        if involves_complex(node) and not (rule is not None and rule.on_pairs):
            # computed on (real, imag) pairs (complex.py)
            self.env[node] = import_complex(self, node, op)
        elif rule is None:
            self._import_decomposed(node, op)
        else:
            ctx = self.context(node, op)
            ctx.writes = writes
            args = self.arg(node.args)
            kwargs = {k: self.arg(v) for k, v in node.kwargs.items()}
            try:
                if not (is_view(op) or rule.in_storage_type) and involves_half(ctx, args, kwargs):
                    self.env[node] = lower_in_float(rule.fn, ctx, args, kwargs)
                else:
                    self.env[node] = rule.fn(ctx, *args, **kwargs)
            except Decompose:
                self._import_decomposed(node, op)
        fresh = set(self.program.buffers) - before
        if mutated is not None:
            self.env[node] = self._rebind_mutated(node, node.args[mutated], self.env[node], fresh)
        for position, value in sorted(writes.items()):
            self._rebind_mutated(node, _arg_at(node, op, position), value, fresh)

    def _comparison(self, node) -> sympy.Basic:
        """A comparison of sizes (`x.shape[0] > 0`, a torch.cond predicate) from its operands:
        export's own value assumes every size symbol positive (`s0 > 0` is True there), which
        an empty dim in the range makes false. Decided here only where the ranges decide it."""
        a, b = (self.arg(x) for x in node.args)
        if not all(isinstance(v, (int, sympy.Expr)) and not isinstance(v, bool) for v in (a, b)):
            return to_sympy(node.meta["val"])
        condition = _COMPARISONS[node.target](sympy.sympify(a), sympy.sympify(b), evaluate=False)
        if not condition.free_symbols:
            return sympy.sympify(bool(condition.doit()))
        if always_holds(condition, self.program.symbols):
            return sympy.true
        if always_holds(negation(condition), self.program.symbols):
            return sympy.false
        return condition

    def _size(self, node) -> sympy.Expr:
        """A dim's size as aotc computes the tensor: an unbacked symbol export gave it (the
        length of a decomposed op's data-dependent result) is bound to that expression."""
        value = self.arg(node.args[0])
        symbol = to_sympy(node.meta.get("val"))
        if not isinstance(value, TensorValue):
            return symbol
        # a complex value's pairs have one dim more than the value
        ndim = value.ndim - is_complex_value(getattr(node.args[0], "meta", {}).get("val"))
        size = sympy.sympify(value.sizes[node.args[1] % max(ndim, 1)])
        if symbol != size:
            self._bind_unbacked(symbol, size)
        return size

    def _storage_offset(self, node) -> sympy.Expr:
        """A view's storage offset: where its first element sits in its buffer (buffers are
        contiguous), an expression over the bound symbols (a piece of a tensor_split)."""
        value = self.arg(node.args[0])
        body = value.body if isinstance(value, TensorValue) else None
        buf = self.program.buffers.get(body.buffer) if isinstance(body, Load) else None
        if buf is None:
            return to_sympy(node.meta.get("val"))
        origin = {v: 0 for v in index_vars(value.ndim)}
        offset = sympy.expand(sum((sympy.sympify(i).xreplace(origin) * s for i, s in
                                   zip(body.index, contiguous_strides(buf.sizes))),
                                  sympy.Integer(0)))
        self._bind_unbacked(to_sympy(node.meta.get("val")), offset)  # export's name for it
        return offset

    def _bind_unbacked(self, symbol, value: sympy.Expr) -> None:
        """Bind `symbol`, when it is an unbacked symbol of export's not bound yet, to the
        run-time value of `value` (an expression over the bound symbols)."""
        if isinstance(symbol, sympy.Symbol) and symbol_is_type(symbol, SymT.UNBACKED_INT) \
                and symbol not in self.program.item_symbols:
            self.program.item_symbols[symbol] = IndexValue(value, DType.int64)
            self.program.symbols.setdefault(symbol, (0, None))

    def context(self, node, op) -> LoweringContext:
        val = node.meta.get("val")
        vals = val if isinstance(val, (tuple, list)) else (val,)
        outputs = tuple(_meta_output(v, f"{node.name} ({op})") if isinstance(v, torch.Tensor)
                        else None for v in vals)
        first = next((o for o in outputs if o is not None), None)
        returns_nothing = isinstance(op, torch._ops.OpOverload) and not op._schema.returns
        if first is None and (returns_nothing or isinstance(val, (tuple, list)) and not val):
            # no outputs at all (unbind of an empty dim, a check): the rule returns no tensor
            first = ((), DType.int64)
        if first is None:
            raise UnsupportedOperatorError(str(op), user_source(node.meta.get("stack_trace")),
                                           "the exported graph has no shape metadata for it")
        def example(a):
            return a.meta.get("val") if isinstance(a, torch.fx.Node) else a

        return LoweringContext(self.program, node.name, str(op), first[0], first[1],
                               user_source(node.meta.get("stack_trace")), outputs,
                               example_args=tuple(example(a) for a in node.args),
                               example_kwargs={k: example(a) for k, a in node.kwargs.items()},
                               guards=tuple(self.guards))

    def _import_decomposed(self, node, op) -> None:
        where = user_source(node.meta.get("stack_trace"))
        if self.decomposition_depth >= MAX_DECOMPOSITION_DEPTH:
            raise UnsupportedOperatorError(str(op), where, "its decompositions nest more than "
                                           f"{MAX_DECOMPOSITION_DEPTH} levels deep")
        try:
            gm = decompose_node(op, node)
        except Exception as e:  # a decomposition that cannot trace this call is no lowering
            raise UnsupportedOperatorError(
                str(op), where, f"its decomposition failed ({type(e).__name__}: {e})") from e
        if gm is None:
            raise UnsupportedOperatorError(str(op), where)
        self.import_traced(node, op, gm, "its decomposition")

    def import_traced(self, node, op, gm: torch.fx.GraphModule, what: str) -> None:
        """Lower the graph `gm` traced for `node` (`what`: its decomposition, its complex
        form), its placeholders standing for the node's traced arguments."""
        where = user_source(node.meta.get("stack_trace"))
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        for ph, a in zip(placeholders, traced_args(node)):
            self.env[ph] = self.arg(a)
        for n in gm.graph.nodes:
            if n.op == "call_function":
                n.meta.setdefault("stack_trace", node.meta.get("stack_trace"))
                n.name = f"{node.name}_{n.name}"
                self.decomposition_depth += 1
                try:
                    self.import_call(n)
                except UnsupportedOperatorError as e:
                    raise UnsupportedOperatorError(
                        str(op), where, f"{what} needs {e.op}, which has no lowering"
                    ) from None
                except AotcError:
                    raise
                except Exception as e:
                    raise UnsupportedOperatorError(
                        str(op), where, f"lowering {what} failed at {n.target} "
                        f"({type(e).__name__}: {e})") from e
                finally:
                    self.decomposition_depth -= 1
            elif n.op == "output":
                self.env[node] = self.arg(n.args[0])

    def _rebind_mutated(self, node, target, result, fresh: set[str]):
        """After `x.op_(...)`, later readers of x (and of every view of x) see the new value
        `result`; returns the value the node itself now has."""
        value = self.env[target]
        where = user_source(node.meta.get("stack_trace")) or node.name
        root = self.program.buffers.get(base_buffer(self.context(node, node.target), value))
        if root is not None and root.kind is BufferKind.CONSTANT \
                and self._state_origin(root.name) is None:
            raise CompileError(
                f"{node.target} at {where} updates parameter or constant '{target.name}' in "
                "place; aotc keeps parameters and lifted constants read-only (registered "
                "buffers may change: they become model state)")
        if _metadata_only(node.target) and (root is None or root.kind is BufferKind.COMPUTED):
            # x.squeeze_() on a local: x is now that view of the same data; no value changes
            self.env[target] = result
            return result
        if isinstance(result, TensorValue) and result.sizes != value.sizes:
            raise CompileError(f"{node.target} at {where}: in-place result changes the shape of "
                               f"its target '{target.name}', an input or buffer")
        return update_in_place(self.context(node, node.target), self.env, value, result, fresh)

    def _import_update(self, spec, value) -> None:
        source = _update_source(self.program, spec)
        if not isinstance(value, TensorValue):
            raise CompileError(f"output {spec.arg.name}: the new value of {spec.target!r} is "
                               "not a tensor")
        name = value.buffer_name()
        buf = self.program.buffers.get(name) if name else None
        if buf is None or buf.kind is not BufferKind.COMPUTED:
            ctx = LoweringContext(self.program, f"update_{source}", "update", value.sizes,
                                  value.dtype)
            name = ctx.pointwise(value.body, value.sizes).buffer_name()
        assert name is not None
        self.program.updates[source] = name

    # ---- outputs -------------------------------------------------------------------------
    def import_outputs(self) -> None:
        out_node = next(n for n in self.ep.graph.nodes if n.op == "output")
        specs = self.ep.graph_signature.output_specs
        claimed: set[str] = set()
        for spec, a in zip(specs, out_node.args[0]):
            if spec.kind in (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION):
                self._import_update(spec, self.arg(a))  # a functionalized program's update
                continue
            if spec.kind is not OutputKind.USER_OUTPUT:
                raise CompileError(f"output {spec.arg}: {spec.kind.name} outputs are not "
                                   "supported; export the model in eval mode")
            value = self.arg(a)
            if value is None or isinstance(value, (bool, int, float)):
                self.program.output_leaves.append(OutputLeaf(value=value))
                continue
            if isinstance(value, sympy.Expr) and value.is_number:
                self.program.output_leaves.append(OutputLeaf(value=int(value)))
                continue
            if isinstance(value, sympy.Basic):  # a SymInt/SymFloat/SymBool: its run-time value
                name, kind = symbolic_output(self.program, f"out_{len(claimed)}", value,
                                             getattr(a, "name", str(a)))
                claimed.add(name)
                self.program.outputs.append(name)
                self.program.output_leaves.append(OutputLeaf(buffer=name, scalar=kind))
                continue
            if not isinstance(value, TensorValue):
                raise CompileError(f"output {getattr(a, 'name', a)} is a {type(value).__name__}; "
                                   "aotc returns tensors and constants only")
            name = value.buffer_name()
            buf = self.program.buffers.get(name) if name else None
            if buf is None or buf.kind is not BufferKind.COMPUTED or name in claimed:
                ctx = LoweringContext(self.program, f"out_{len(claimed)}", "output",
                                      value.sizes, value.dtype)
                name = ctx.pointwise(value.body, value.sizes).buffer_name()
            claimed.add(name)
            self.program.outputs.append(name)
            if isinstance(a, torch.fx.Node) and is_complex_value(a.meta.get("val")):  # pairs
                self.program.complex_views[name] = complex_dtype(a.meta["val"].dtype, name)
            # a float or bool .item() stays a 0-dim tensor here; the caller gets a number
            self.program.output_leaves.append(OutputLeaf(buffer=name, scalar=_SCALAR_OUTPUTS.get(
                type(spec.arg).__name__)))


def _update_source(program: Program, spec) -> str:
    """The buffer that a BUFFER_MUTATION / USER_INPUT_MUTATION output updates."""
    if spec.kind is OutputKind.BUFFER_MUTATION:
        found = [c.buffer for c in program.constants if c.fqn == spec.target]
    else:
        found = [i.buffer for i in program.inputs if i.name == spec.target]
    if not found:
        raise CompileError(f"output {spec.arg.name} updates {spec.target!r}, which is not a "
                           "buffer or tensor input of the program")
    return found[0]


# resize_/resize_as_ to at most the elements a local holds keep its data too (lowering
# refuses growing it)
_METADATA_ONLY = frozenset({"squeeze_", "unsqueeze_", "t_", "transpose_", "swapdims_",
                            "swapaxes_", "as_strided_", "resize_", "resize_as_"})


def _metadata_only(op) -> bool:
    """In-place ops that change a tensor's shape or strides, never its data."""
    return getattr(op, "_opname", None) in _METADATA_ONLY


_SCALAR_OUTPUTS = {"SymIntArgument": "int", "SymFloatArgument": "float", "SymBoolArgument": "bool"}


def _bound(v) -> int | None:
    """A range end as an int, None when infinite (torch's int_oo) or beyond int64."""
    try:
        b = int(v)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None
    return b if abs(b) < 2**62 else None


def import_program(ep: torch.export.ExportedProgram, freezing: bool = False,
                   chains: dict | None = None) -> Program:
    """The program in loop-level IR; `freezing` folds subgraphs of weights (freezing.py);
    `chains` maps output nodes to the chains passes/chains.py found (attention, quantized
    products), each lowered as one template."""
    imp = Importer(ep, freezing, chains)
    imp.import_symbols()
    imp.import_placeholders()
    widen_size_ranges(imp.program)  # what ep.module() accepts, not export's 0/1 rule
    weights = inner_weights(ep.graph, imp.env, weight_placeholders(ep), imp.weights)
    for node, weight in weights.items():
        imp.weights[imp.env[node].buffer_name()] = weight
    import_graph(imp, ep.graph, weights)
    imp.import_outputs()
    import_input_guards(imp.program, list(getattr(ep, "_guards_code", None) or ()),
                        tuple(ep.graph_signature.user_inputs))
    return imp.program


_COMPARISONS = {operator.gt: sympy.Gt, operator.ge: sympy.Ge, operator.lt: sympy.Lt,
                operator.le: sympy.Le, operator.eq: sympy.Eq, operator.ne: sympy.Ne}


def _assertion_text(node) -> str:
    """What an _assert_scalar node checks, in the user's words where the graph has them."""
    message = node.args[1] if len(node.args) > 1 and isinstance(node.args[1], str) else ""
    where = user_source(node.meta.get("stack_trace"))
    text = message.removeprefix("Runtime assertion failed for expression ") or node.name
    return f"the check {text.split(' on node ')[0]}" + (f" at {where}" if where else "")


def _mutated_arg(op) -> int | None:
    schema = getattr(op, "_schema", None)
    if schema is None or not schema.is_mutable:
        return None
    for k, a in enumerate(schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            return k
    return None


def _arg_at(node, op, position: int):
    """The node's argument at schema position `position`, given positionally or by name."""
    if position < len(node.args):
        return node.args[position]
    return node.kwargs[op._schema.arguments[position].name]


def _functional_variant(op, node):
    name = op._schema.name.split("::")[-1]
    base = name[:-1] if name.endswith("_") else None
    packet = getattr(torch.ops.aten, base, None) if base else None
    overload = op._overloadname
    if packet is not None and overload in packet.overloads():
        return getattr(packet, overload)
    # the same arguments under another overload name (transpose_.default, transpose.int)
    names = [a.name for a in op._schema.arguments]
    for other in (packet.overloads() if packet is not None else ()):
        candidate = getattr(packet, other)
        if [a.name for a in candidate._schema.arguments] == names:
            return candidate
    raise UnsupportedOperatorError(str(op), user_source(node.meta.get("stack_trace")),
                                   "in-place op without a functional variant")


def is_view(op) -> bool:
    """Whether `op` returns a view of its input (views stay index maps, never computed)."""
    schema = getattr(op, "_schema", None)
    return bool(schema and schema.returns and schema.returns[0].alias_info is not None
                and not schema.is_mutable)
