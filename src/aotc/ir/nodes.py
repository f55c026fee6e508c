"""Buffers of the loop-level IR and the program that holds them.

A buffer is computed by one op: Pointwise (a body per output index), Reduction (a body
combined over reduced axes) or a Template (a hand-written kernel such as GEMM). Views
never become buffers: lowering folds them into the index of each Load.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

import sympy

from ..dtypes import DType
from .expr import Node


class ReduceType(enum.Enum):
    SUM = "sum"
    PROD = "prod"
    MAX = "max"  # NaN-propagating, like torch.amax
    MIN = "min"
    ANY = "any"
    ALL = "all"
    ARGMAX = "argmax"  # int64 position (row-major over the reduced axes) of the first max
    ARGMIN = "argmin"


ARG_REDUCTIONS = frozenset({ReduceType.ARGMAX, ReduceType.ARGMIN})


@dataclass(frozen=True)
class Pointwise:
    """Output element (i0, ..., i{n-1}) holds `body`."""

    body: Node


@dataclass(frozen=True)
class Reduction:
    """Output element (i...) holds reduce_type over r in `ranges` of `body` (uses i* and r*).
    Arg reductions compare `body` values but store an int64 position."""

    reduce_type: ReduceType
    ranges: tuple[sympy.Expr, ...]
    body: Node


@dataclass(frozen=True)
class Operand:
    """A strided window of a materialized buffer, as a template reads it."""

    buffer: str
    offset: sympy.Expr
    strides: tuple[sympy.Expr, ...]


@dataclass(frozen=True)
class Gemm:
    """out[b, m, n] = alpha * sum_k a[b, m, k] * b[b, k, n] + beta * bias[b, m, n].

    Operands carry (batch, rows, cols) strides; the output is contiguous (batch, M, N)
    (a 2-D output simply has batch 1).
    """

    a: Operand
    b: Operand
    bias: Operand | None
    batch: sympy.Expr
    m: sympy.Expr
    n: sympy.Expr
    k: sympy.Expr
    alpha: float = 1.0
    beta: float = 1.0


Op = Pointwise | Reduction | Gemm


@dataclass(frozen=True)
class Origin:
    """Where a buffer came from: the ATen nodes and the user's source line."""

    nodes: tuple[str, ...]
    targets: tuple[str, ...]
    source: str = ""


class BufferKind(enum.Enum):
    INPUT = "input"
    CONSTANT = "constant"
    COMPUTED = "computed"


@dataclass
class Buffer:
    name: str
    dtype: DType
    sizes: tuple[sympy.Expr, ...]
    kind: BufferKind
    op: Op | None = None
    origin: Origin | None = None

    def __post_init__(self) -> None:
        if (self.op is None) != (self.kind is not BufferKind.COMPUTED):
            raise ValueError(f"buffer {self.name}: only computed buffers have an op")


@dataclass
class InputSpec:
    name: str  # the user's argument name
    buffer: str


@dataclass
class ConstantSpec:
    fqn: str  # fully-qualified name in the state dict (or the lifted constant's name)
    buffer: str
    data: object  # host array (numpy) of the value, frozen at compile time
    folded_from: tuple[str, ...] = ()  # weights a folded constant was computed from (freezing)


@dataclass
class OutputLeaf:
    """One leaf of the output structure: a computed buffer, or a constant (None, a number)."""

    buffer: str | None = None
    value: object = None


@dataclass
class Program:
    """The whole model in loop-level IR, buffers in a valid execution order."""

    buffers: dict[str, Buffer] = field(default_factory=dict)
    inputs: list[InputSpec] = field(default_factory=list)
    constants: list[ConstantSpec] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # the tensor outputs, in ABI order
    output_leaves: list[OutputLeaf] = field(default_factory=list)  # every leaf, in pytree order
    # shape symbol -> (min, max); max None when unbounded
    symbols: dict[sympy.Symbol, tuple[int, int | None]] = field(default_factory=dict)

    def add(self, buf: Buffer) -> Buffer:
        if buf.name in self.buffers:
            raise ValueError(f"duplicate buffer name {buf.name}")
        self.buffers[buf.name] = buf
        return buf

    def computed(self) -> list[Buffer]:
        return [b for b in self.buffers.values() if b.kind is BufferKind.COMPUTED]
