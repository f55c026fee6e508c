"""Find torchao's weight-only quantized linears, so that import lowers each as one
WeightOnlyMatmul (lowering/weight_only.py) reading the int8 weight as it is stored:

    Int8WeightOnlyConfig:
        w = to(t(qdata [N, K] int8), float32)
        y = mm(x2d, w) * flatten(to(scale [N, 1], float32))      (then + bias, in place)
    IntxWeightOnlyConfig (int4 values held in int8, PerGroup(G) or PerAxis):
        w = torchao.dequantize_affine(qdata [N, K], [1, G], scale [N, K/G],
                                      zero_point [N, K/G], int8, qmin, qmax)
        y = linear(x, w, bias)

matches when qdata, scale and zero_point are inner tensors of a tensor-subclass weight
(export.access_subclass_inner_tensor of a parameter), float32 scales and int8 zero points
of those sizes, and each intermediate has no other reader. Its inner nodes stay out of
freezing (keeps_weights), so the weight is never stored dequantized and stays swappable
under its own names (a.weight.qdata, ...).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import fx

from ..frontend.freezing import weight_placeholders
from ..frontend.subclass import ACCESS, is_subclass
from ..lowering.weight_only import lower_weight_only_linear

aten = torch.ops.aten
DEQUANTIZE_AFFINE = "torchao.dequantize_affine.default"
ASSERTS = (aten._assert_tensor_metadata.default,)
TO_FLOAT = (aten.to.dtype, aten._to_copy.default)


@dataclass(frozen=True)
class WeightOnlyLinear:
    """One weight-only linear: `output` computed from these operands."""

    output: fx.Node
    x: fx.Node  # float32 [..., K]
    q: fx.Node  # the access of qdata, int8 [N, K]
    scale: fx.Node  # float32, N * K/group elements
    zero: fx.Node | None  # int8, as scale; None: all 0
    bias: fx.Node | None
    group: int
    bits: int
    inner: tuple[fx.Node, ...]
    keeps_weights = True  # the int8 weight reaches the kernel as it is, never dequantized

    def lower(self, imp):
        ctx = imp.context(self.output, self.output.target)
        zero, bias = (imp.arg(n) if n is not None else None for n in (self.zero, self.bias))
        return lower_weight_only_linear(ctx, imp.arg(self.x), imp.arg(self.q),
                                        imp.arg(self.scale), zero, bias, self.group, self.bits)


def _val(node) -> torch.Tensor | None:
    v = node.meta.get("val") if isinstance(node, fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None


def _readers(node: fx.Node) -> list[fx.Node]:
    """Its readers other than metadata assertions."""
    return [u for u in node.users if u.target not in ASSERTS]


def _only_reader(node, reader: fx.Node) -> bool:
    return isinstance(node, fx.Node) and _readers(node) == [reader]


def _inner(node, attr: str, subclass_weights: dict) -> torch.Tensor | None:
    """The value of `node` when it reads inner tensor `attr` of a subclass weight."""
    if not isinstance(node, fx.Node) or node.target is not ACCESS or node.args[1] != attr:
        return None
    data = subclass_weights.get(node.args[0])
    return getattr(data, attr, None) if data is not None else None


def _float32(node) -> bool:
    v = _val(node)
    return v is not None and v.dtype == torch.float32


def _to_float(node) -> fx.Node | None:
    """x of `to(x, float32)` (or `_to_copy`), else None."""
    if not isinstance(node, fx.Node) or node.target not in TO_FLOAT or not _float32(node):
        return None
    return node.args[0] if isinstance(node.args[0], fx.Node) else None


def _bias(node, n: int, weights: dict) -> bool:
    v = _val(node)
    return node in weights and v is not None and v.dtype == torch.float32 and \
        tuple(v.shape) == (n,)


def _int8_weight_only(mul: fx.Node, subs: dict, weights: dict) -> WeightOnlyLinear | None:
    """mm(x2d, to(t(qdata), float32)) * flatten(to(scale, float32)) [+ bias, in place]."""
    if mul.target is not aten.mul.Tensor or len(mul.args) != 2 or not _float32(mul):
        return None
    mm, flat = mul.args
    if not isinstance(mm, fx.Node) or mm.target is not aten.mm.default or \
            not _only_reader(mm, mul):
        return None
    x, to = mm.args
    t = _to_float(to)
    if not _float32(x) or t is None or not _only_reader(to, mm) or \
            t.target is not aten.t.default or not _only_reader(t, to):
        return None
    q = _inner(t.args[0], "qdata", subs)
    if q is None or q.dtype != torch.int8 or q.ndim != 2 or not q.is_contiguous():
        return None
    n, k = q.shape
    chain, scale, reader = [t, to, mm], flat, mul
    if isinstance(scale, fx.Node) and scale.target is aten.flatten.using_ints:
        if not _only_reader(scale, mul):
            return None
        chain.append(scale)
        scale, reader = scale.args[0], scale
    source = _to_float(scale)
    if source is not None and _only_reader(scale, reader):
        chain.append(scale)
        scale = source
    s = _inner(scale, "scale", subs)
    if s is None or s.dtype != torch.float32 or s.numel() != n or not s.is_contiguous():
        return None
    output, bias = mul, None
    reshape = _readers(mul)
    if len(reshape) == 1 and reshape[0].target is aten.reshape.default:
        add = _readers(reshape[0])
        if len(add) == 1 and add[0].target in (aten.add_.Tensor, aten.add.Tensor) and \
                add[0].args[0] is reshape[0] and len(add[0].args) == 2 and \
                not add[0].kwargs and _bias(add[0].args[1], n, weights):
            chain += [mul, reshape[0]]
            output, bias = add[0], add[0].args[1]
    return WeightOnlyLinear(output, x, t.args[0], scale, None, bias, k, 8, tuple(chain))


def _per_group(t: torch.Tensor | None, dtype: torch.dtype, n: int, groups: int) -> bool:
    """Whether t holds one `dtype` value per (row, group), contiguous: [n, groups]."""
    return t is not None and t.dtype == dtype and t.is_contiguous() and \
        t.numel() == n * groups and t.ndim >= 1 and t.shape[0] == n


def _dequantize_affine(node: fx.Node, subs: dict, weights: dict) -> WeightOnlyLinear | None:
    """linear(x, dequantize_affine(qdata, [1, G], scale, zero_point, int8, qmin, qmax), b)."""
    if node.target is not aten.linear.default or not _float32(node) or len(node.args) < 2:
        return None
    x, dq = node.args[:2]
    bias = node.args[2] if len(node.args) > 2 else node.kwargs.get("bias")
    if not _float32(x) or not isinstance(dq, fx.Node) or str(dq.target) != DEQUANTIZE_AFFINE \
            or not _only_reader(dq, node) or not _float32(dq) or len(dq.args) < 5:
        return None
    q_node, block, s_node, z_node, dtype = dq.args[:5]
    q, s = _inner(q_node, "qdata", subs), _inner(s_node, "scale", subs)
    if q is None or s is None or dtype != torch.int8 or q.dtype != torch.int8 or q.ndim != 2:
        return None
    n, k = q.shape
    if list(block) != [1, block[1]] or not 0 < block[1] <= k or k % block[1]:
        return None
    group = int(block[1])
    if not q.is_contiguous() or not _per_group(s, torch.float32, n, k // group):
        return None
    z = _inner(z_node, "zero_point", subs) if z_node is not None else None
    if z_node is not None and not _per_group(z, torch.int8, n, k // group):
        return None
    if bias is not None and not _bias(bias, n, weights):
        return None
    qmin, qmax = (list(dq.args[5:7]) + [None, None])[:2]
    bits = 4 if isinstance(qmin, int) and isinstance(qmax, int) and -8 <= qmin <= qmax <= 7 \
        else 8
    return WeightOnlyLinear(node, x, q_node, s_node, z_node, bias, group, bits, (dq,))


def find_weight_only(ep: torch.export.ExportedProgram) -> dict[fx.Node, WeightOnlyLinear]:
    """Each weight-only quantized linear of the program's graph, by output node."""
    weights = weight_placeholders(ep)
    subs = {node: data for node, (data, _) in weights.items() if is_subclass(data)}
    if not subs:
        return {}
    found = {}
    for node in ep.graph.nodes:
        if node.op != "call_function":
            continue
        chain = _int8_weight_only(node, subs, weights) or _dequantize_affine(node, subs, weights)
        if chain is not None:
            found[chain.output] = chain
    return found


def format_weight_only(chains: dict[fx.Node, WeightOnlyLinear]) -> str:
    """One line per linear, for tests and dumps."""
    lines = []
    for c in chains.values():
        zero = f" - {c.zero.name}" if c.zero is not None else ""
        bias = f" + {c.bias.name}" if c.bias is not None else ""
        lines.append(f"{c.output.name} = {c.x.name} @ (s{c.bits} {c.q.name}{zero}) * "
                     f"{c.scale.name} (group {c.group}){bias}")
    return "\n".join(lines) + ("\n" if lines else "")
