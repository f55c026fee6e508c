"""Complex values at import: a complex tensor of sizes S is, inside the IR, the real tensor of
its (real, imag) pairs, sizes S + (2,). Each node whose value or operand is complex is traced
as its rule in complex_ops.py (or its decomposition) over those pairs, then lowered."""
from __future__ import annotations

import sympy
import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils import _pytree as pytree

from ..dtypes import DType
from ..errors import CompileError, UnsupportedOperatorError
from ..ir.nodes import Buffer, BufferKind, Program
from . import complex_views  # noqa: F401  (registers the views' and creation ops' rules)
from .complex_ops import RULES, Pair, real_dtype
from .decompose import _plain, _traced, find_decompositions
from .source import user_source


def is_complex_value(v) -> bool:
    """Whether export's value `v` is a complex tensor (or a list holding one)."""
    if isinstance(v, (list, tuple)):
        return any(is_complex_value(x) for x in v)
    return isinstance(v, torch.Tensor) and v.dtype.is_complex


def involves_complex(node: torch.fx.Node) -> bool:
    """Whether the node computes a complex value or reads one."""
    return is_complex_value(node.meta.get("val")) or any(
        is_complex_value(a.meta.get("val")) for a in node.all_input_nodes)


def complex_ops() -> list[str]:
    """The ATen ops (every overload) computed on complex values, for the coverage table."""
    return sorted(RULES)


def pairs_of(data: torch.Tensor) -> torch.Tensor:
    """A complex constant's value as its real pairs (the same bytes); a real one as it is."""
    if not data.dtype.is_complex:
        return data
    return torch.view_as_real(data.detach().resolve_conj().resolve_neg().contiguous())


def add_pairs_buffer(program: Program, name: str, dtype: torch.dtype, sizes: tuple,
                     kind: BufferKind) -> Buffer:
    """An input or constant buffer; a complex one holds its pairs and is marked complex for
    the ABI (Program.complex_views)."""
    d = complex_dtype(dtype, name)
    buf = program.add(Buffer(name, d.real, (*sizes, sympy.Integer(2)), kind))
    program.complex_views[buf.name] = d
    return buf


def complex_dtype(dtype: torch.dtype, what: str) -> DType:
    """aotc's complex dtype for torch's; complex32 (chalf) is a CompileError."""
    if dtype not in (torch.complex64, torch.complex128):
        raise CompileError(f"{what} has dtype {dtype}, which aotc does not compute yet "
                           "(complex types: complex64, complex128)")
    return DType.from_name(str(dtype))


def import_complex(imp, node: torch.fx.Node, op):
    """The node's value (complex ones as pairs), from the rule of `op` (the node's op, or its
    functional form for an in-place one) traced over the pairs of its operands; an op with no
    rule is decomposed, and refused if it has no decomposition."""
    for v in (node.meta.get("val"), *(a.meta.get("val") for a in node.all_input_nodes)):
        for t in v if isinstance(v, (list, tuple)) else (v,):
            if is_complex_value(t):
                complex_dtype(t.dtype, f"{node.name} ({op})")
    where = user_source(node.meta.get("stack_trace")) or node.name
    name = getattr(op, "_schema", None) and op._schema.name
    fn = RULES.get(name) if name else None
    if fn is None:
        if not find_decompositions(op):
            raise UnsupportedOperatorError(
                str(op), where, "aotc computes complex values with the ops of docs/OPS.md's "
                "complex table and their decompositions; this op has neither")
        imp._import_decomposed(node, op)  # its parts on complex values, each by its rule
        return imp.env[node]
    try:
        gm = _trace(fn, node)
    except (NotImplementedError, CompileError) as e:
        raise UnsupportedOperatorError(str(op), where, f"on complex values: {e}") from None
    imp.import_traced(node, op, gm, "its complex form")
    return imp.env[node]


def _pairs_fake(v):
    """The stand-in a rule traces over: a complex tensor's pairs, contiguous."""
    if not (isinstance(v, torch.Tensor) and v.dtype.is_complex):
        return v
    return torch.empty((*v.shape, 2), dtype=real_dtype(v.dtype))


def _trace(fn, node: torch.fx.Node) -> torch.fx.GraphModule:
    flat, spec = pytree.tree_flatten((_plain(node.args), _plain(node.kwargs)))
    values = [a.meta.get("val") if isinstance(a, torch.fx.Node) else a for a in flat]
    positions = [k for k, v in enumerate(values) if _traced(v)]
    out = node.meta.get("val")
    fake_mode = next((v.fake_mode for v in values if isinstance(v, FakeTensor)), None)
    if fake_mode is None:
        first = out[0] if isinstance(out, (list, tuple)) else out
        fake_mode = getattr(first, "fake_mode", None) or FakeTensorMode()
    with fake_mode:
        stand_ins = [_pairs_fake(values[k]) for k in positions]

    def run(*ts):
        vals = list(values)
        for k, t in zip(positions, ts):
            vals[k] = Pair(t) if is_complex_value(values[k]) else t
        args, kwargs = pytree.tree_unflatten(vals, spec)
        return _unpaired(fn(out, *args, **kwargs), out, node)

    with fake_mode:
        return make_fx(run, tracing_mode="real")(*stand_ins)


def _unpaired(result, out, node):
    """The rule's result as tensors: a Pair's pairs where export's value is complex, checked
    against that value's rank and dtype (a rule that disagrees is a defect, never a result)."""
    if isinstance(out, (list, tuple)):
        if not isinstance(result, (list, tuple)) or len(result) != len(out):
            raise RuntimeError(f"the complex form of {node.target} returned {type(result)}")
        return [_unpaired(r, o, node) for r, o in zip(result, out)]
    if out.dtype.is_complex:
        ok = isinstance(result, Pair) and result.t.dim() == out.dim() + 1 \
            and result.t.dtype == real_dtype(out.dtype)
        t = result.t if isinstance(result, Pair) else None
    else:
        ok = isinstance(result, torch.Tensor) and result.dim() == out.dim()
        t = result.to(out.dtype) if ok and result.dtype != out.dtype else result
    if not ok:  # a defect of the rule: an InternalError naming the op (errors.located)
        raise RuntimeError(f"the complex form of {node.target} does not give a value of rank "
                           f"{out.dim()} and dtype {out.dtype}")
    return t
