"""What a lowering rule works with: tensor values and the explicit lowering context."""
from __future__ import annotations

from dataclasses import dataclass, field

import sympy

from ..dtypes import DType
from ..ir.expr import Load, Node, substitute_index
from ..ir.nodes import Buffer, BufferKind, ConstantSpec, Op, Origin, Pointwise, Program
from ..ir.symbols import always_holds, index_vars, negation


@dataclass(frozen=True)
class TensorValue:
    """A tensor during lowering: its sizes, dtype and the value of element (i0, ..., i{n-1}).

    A value backed by a buffer has body `Load(buf, (i0, ...))`; a view has a Load with
    a re-mapped index; nothing else stays lazy (each op's result becomes a buffer).
    """

    sizes: tuple[sympy.Expr, ...]
    dtype: DType
    body: Node
    # the sizes of the buffer a view's Load reads, where known: a prefix view (x[:2],
    # x.narrow(0, 0, k)) has the identity index too but is not the whole buffer
    base_sizes: tuple[sympy.Expr, ...] | None = field(default=None, compare=False)

    @property
    def ndim(self) -> int:
        return len(self.sizes)

    def load(self, index) -> Node:
        """The element at `index` (one sympy expression per axis)."""
        index = tuple(sympy.sympify(i) for i in index)
        if len(index) != self.ndim:
            raise ValueError(f"index of rank {len(index)} into a tensor of rank {self.ndim}")
        return substitute_index(self.body, dict(zip(index_vars(self.ndim), index)))

    def buffer_name(self) -> str | None:
        """The buffer this value is exactly (identity index, same sizes), else None."""
        b = self.body
        if not (isinstance(b, Load) and b.index == index_vars(self.ndim)):
            return None
        if self.base_sizes is not None and tuple(self.base_sizes) != tuple(self.sizes):
            return None
        return b.buffer


def buffer_value(buf: Buffer) -> TensorValue:
    sizes = tuple(sympy.sympify(s) for s in buf.sizes)
    return TensorValue(sizes, buf.dtype, Load(buf.name, index_vars(len(sizes)), buf.dtype), sizes)


@dataclass
class LoweringContext:
    """Passed to every lowering rule: the program being built and the node being lowered."""

    program: Program
    node_name: str
    target: str
    out_sizes: tuple[sympy.Expr, ...]  # of the node's (first) tensor output
    out_dtype: DType
    source: str = ""
    # every output of a multi-output node (sizes, dtype); None where it is not a tensor
    outputs: tuple[tuple[tuple[sympy.Expr, ...], DType] | None, ...] = ()
    # new values of arguments the op updates in place (schema position -> value), set by a
    # rule whose op writes its arguments: batch_norm in training updates its running stats
    writes: dict[int, TensorValue] = field(default_factory=dict)
    # the node's arguments as export recorded them (FakeTensors: sizes, strides, dtypes), for
    # a rule that follows a choice eager makes from them (which SDPA kernel runs)
    example_args: tuple = ()
    example_kwargs: dict = field(default_factory=dict)
    # the torch.cond branches (and while_loops) the node is inside, outermost first
    guards: tuple = ()

    def require(self, condition, failure: str) -> None:
        """Fail the run with an input error naming this op and its source line, as eager
        raises, when `condition` (over the shape symbols) does not hold: checked with the
        input guards (before any kernel, and before the output sizes are computed). Nothing
        when the symbols' ranges make it always hold (static sizes). Inside a torch.cond
        branch with a shape predicate it is required only where the branch is taken; one
        under a tensor predicate or in a while_loop is not checked (as torch._check there).
        Build `condition` unevaluated (`sympy.Ne(n, 0, evaluate=False)`): export's size
        symbols are declared positive, so sympy would call it true whatever their range."""
        condition = sympy.sympify(condition)
        if always_holds(condition, self.program.symbols):
            return
        for g in self.guards:
            if g.loop or isinstance(g.predicate, str):
                return
            skipped = negation(g.predicate) if g.value else g.predicate
            condition = sympy.Or(skipped, condition)
        where = f" at {self.source}" if self.source else ""
        self.program.checks.append((condition, f"{self.target}{where}: {failure}"))

    def origin(self) -> Origin:
        return Origin((self.node_name,), (self.target,), self.source)

    def fresh_name(self, hint: str | None = None) -> str:
        return self.program.fresh_name(_c_identifier(hint or self.node_name))

    def emit(self, op: Op, sizes, dtype: DType, hint: str | None = None,
             absorbs: Buffer | None = None) -> TensorValue:
        """Add a computed buffer for `op` and return its value. A buffer that `absorbs` an
        earlier one (a convolution with this node's batch norm, activation or residual add
        applied) comes from that one's nodes and source lines too."""
        origin = self.origin()
        if absorbs is not None and absorbs.origin is not None:
            before = absorbs.origin
            sources = [t for t in (before.source, origin.source) if t]
            origin = Origin(before.nodes + origin.nodes, before.targets + origin.targets,
                            "; ".join(dict.fromkeys(sources)))
        buf = Buffer(self.fresh_name(hint), dtype, tuple(sympy.sympify(s) for s in sizes),
                     BufferKind.COMPUTED, op, origin)
        self.program.add(buf)
        return buffer_value(buf)

    def pointwise(self, body: Node, sizes=None, hint: str | None = None) -> TensorValue:
        sizes = self.out_sizes if sizes is None else sizes
        return self.emit(Pointwise(body), sizes, body.dtype, hint)

    def constant(self, data, hint: str, folded_from: tuple[str, ...] = ()) -> TensorValue:
        """A new constant buffer holding `data` (a torch tensor computed at compile time:
        folded weights, index tables), stored in the package's weights. A value computed
        from weights names them in `folded_from`: the runtime then refuses to swap them, as
        the swap would not reach it, and the constant is named `_folded.*` like freezing's."""
        name = self.fresh_name(f"c_{self.node_name}_{hint}")
        dtype = DType.from_name(str(data.dtype))
        buf = Buffer(name, dtype, tuple(sympy.Integer(s) for s in data.shape), BufferKind.CONSTANT)
        self.program.add(buf)
        fqn = f"{self.node_name}.{hint}"
        self.program.constants.append(ConstantSpec(f"_folded.{fqn}" if folded_from else fqn,
                                                   name, data.detach().contiguous(),
                                                   tuple(sorted(set(folded_from)))))
        return buffer_value(buf)

    def realize(self, value: TensorValue) -> TensorValue:
        """The value as a buffer of its own, copying only when it is a view."""
        if value.buffer_name() is not None:
            return value
        return self.pointwise(value.body, value.sizes, hint=f"{self.node_name}_copy")


def _c_identifier(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else f"b_{out}"
