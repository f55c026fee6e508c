"""Find attention written out by hand in the exported graph: matmul(softmax(mask(scale *
matmul(q, k^T))), v), so that import lowers the chain as one Attention template.

Matched on the ATen graph, before lowering, where the chain is still plain to read. A
chain matches when each of its intermediate values (scores, scaled, masked, softmax) has
no reader outside it, so nothing needs the [q_len, kv_len] matrix, and its operands are
float tensors. The scale is any product of scalar `mul`s and `div`s on the scores; the mask
is an `add` of a float tensor or a `masked_fill` of a bool one, after the scale; casts
between float32 and half, inference dropout and copies around the softmax are looked
through (the template computes in float32 and rounds once).
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass

import torch
from torch import fx

from ..lowering.attention import lower_attention_chain
from ..lowering.opmath import involves_half, lower_in_float

aten = torch.ops.aten
MATMULS = (aten.matmul.default, aten.bmm.default)
SOFTMAXES = (aten.softmax.int, aten._softmax.default, aten._safe_softmax.default)
SCALINGS = (aten.mul.Tensor, aten.mul.Scalar, aten.div.Tensor, aten.div.Scalar)
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
# around the softmax: ops that leave the values as they are (a cast between float32 and
# half, inference dropout, a copy), as LLaMA and Hugging Face models write it
PASS_THROUGH = (aten.to.dtype, aten._to_copy.default, aten.type_as.default,
                aten.dropout.default, aten.clone.default, aten.alias.default, aten.detach.default)
ASSERTIONS = (aten._assert_tensor_metadata.default,)


@dataclass(frozen=True)
class AttentionChain:
    """One attention chain: `output` (the last matmul) is computed from these operands."""

    output: fx.Node
    query: fx.Node
    key_t: fx.Node  # k transposed: [..., head_dim, kv_len]
    value: fx.Node
    scale: float
    mask: fx.Node | None = None
    mask_fill: float | None = None  # None: a float mask added; else the masked_fill value
    inner: tuple[fx.Node, ...] = ()  # the chain's own nodes, which nothing else reads
    empty_rows_nan: bool = True  # softmax of a row of -inf is NaN (_safe_softmax: 0)
    keeps_weights = False  # a chain whose q and k are weights folds instead

    def lower(self, imp):
        """The chain as one Attention template, at its output node."""
        ctx = imp.context(self.output, self.output.target)
        args = [imp.arg(a) if a is not None else None
                for a in (self.query, self.key_t, self.value, self.mask)]
        kwargs = {"scale": self.scale, "fill": self.mask_fill,
                  "empty_rows_nan": self.empty_rows_nan}
        if involves_half(ctx, args, {}):
            return lower_in_float(lower_attention_chain, ctx, args, kwargs)
        return lower_attention_chain(ctx, *args, **kwargs)


def _tensor(node) -> torch.Tensor | None:
    val = node.meta.get("val") if isinstance(node, fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


def _sole_reader(node: fx.Node, reader: fx.Node) -> bool:
    """Whether `reader` is the only node reading `node` (metadata assertions aside)."""
    return [u for u in node.users if u.target not in ASSERTIONS] == [reader]


def _passed_through(node: fx.Node) -> fx.Node | None:
    """The input of `node` when it returns that input's values unchanged, else None."""
    if node.target not in PASS_THROUGH or not isinstance(node.args[0], fx.Node):
        return None
    src, out = _tensor(node.args[0]), _tensor(node)
    if src is None or out is None or src.shape != out.shape:
        return None
    # a cast between float32 and half: the template computes in float32 throughout
    if src.dtype != out.dtype and not (src.dtype in FLOATS and out.dtype in FLOATS):
        return None
    if node.target is aten.dropout.default and node.args[2]:
        return None  # dropout in training mode
    return node.args[0]


def _softmax_input(node: fx.Node) -> fx.Node | None:
    """x when `node` is a softmax of x over its last dim, in x's own dtype."""
    if node.target not in SOFTMAXES:
        return None
    x = node.args[0]
    t = _tensor(x)
    if not isinstance(x, fx.Node) or t is None:
        return None
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if not isinstance(dim, int) or dim not in (-1, t.ndim - 1):
        return None
    if node.target is aten._softmax.default and node.args[2]:
        return None  # half_to_float changes the dtype
    if node.target is aten.softmax.int:
        dtype = node.args[2] if len(node.args) > 2 else node.kwargs.get("dtype")
        if dtype is not None and dtype != t.dtype:
            return None
    return x


def _match(out: fx.Node) -> AttentionChain | None:
    if out.target not in MATMULS or len(out.args) != 2:
        return None
    probs, value = out.args
    inner: list[fx.Node] = []
    reader = out
    while isinstance(probs, fx.Node) and _sole_reader(probs, reader) \
            and _passed_through(probs) is not None:
        inner.append(probs)
        reader, probs = probs, _passed_through(probs)
    if not isinstance(probs, fx.Node) or not _sole_reader(probs, reader):
        return None
    x = _softmax_input(probs)
    if x is None:
        return None
    inner.append(probs)
    while _sole_reader(x, inner[-1]) and _passed_through(x) is not None:  # scores.float()
        inner.append(x)
        x = _passed_through(x)
    mask, fill = None, None
    # the mask, last before the softmax
    if x.target is aten.add.Tensor and len(x.args) == 2 and not x.kwargs.get("alpha", 1) != 1:
        a, b = x.args
        if _tensor(a) is not None and _tensor(b) is not None and _sole_reader(x, inner[-1]):
            scores_side = a if a.target in MATMULS + SCALINGS else b
            other = b if scores_side is a else a
            if _tensor(other).dtype in FLOATS \
                    and _tensor(scores_side).shape == _tensor(x).shape:
                inner.append(x)
                mask, x = other, scores_side
    elif x.target is aten.masked_fill.Scalar and _sole_reader(x, inner[-1]):
        src, m, value_fill = x.args
        if _tensor(m) is not None and _tensor(m).dtype is torch.bool \
                and isinstance(value_fill, (int, float)):
            inner.append(x)
            mask, fill, x = m, float(value_fill), src
    # scalar scaling
    scale = 1.0
    while x.target in SCALINGS and _sole_reader(x, inner[-1]):
        a, b = x.args
        if x.target in (aten.mul.Tensor, aten.mul.Scalar) and not isinstance(a, fx.Node):
            a, b = b, a  # 0.125 * scores
        if not isinstance(a, fx.Node) or not isinstance(b, (int, float)) or isinstance(b, bool):
            break
        if x.target in (aten.div.Tensor, aten.div.Scalar):
            if b == 0 or x.kwargs.get("rounding_mode") is not None:
                break
            scale /= b
        else:
            scale *= b
        inner.append(x)
        x = a
    if x.target not in MATMULS or len(x.args) != 2 or not _sole_reader(x, inner[-1]):
        return None
    query, key_t = x.args
    operands = (query, key_t, value) + ((mask,) if mask is not None else ())
    if any(_tensor(t) is None for t in operands):
        return None
    q, k, v = (_tensor(t) for t in (query, key_t, value))
    if any(t.dtype not in FLOATS or t.ndim < 2 for t in (q, k, v)) \
            or not q.dtype == k.dtype == v.dtype or not math.isfinite(scale):
        return None
    inner.append(x)
    return AttentionChain(out, query, key_t, value, scale, mask, fill, tuple(inner),
                          probs.target is not aten._safe_softmax.default)


def find_attention(graph: fx.Graph) -> dict[fx.Node, AttentionChain]:
    """Each attention chain of `graph` and of its subgraphs (torch.cond branches,
    torch.while_loop functions, nested ones), by its output node."""
    found = {}
    for node in graph.nodes:
        if node.op == "call_function":
            chain = _match(node)
            if chain is not None:
                found[node] = chain
        elif node.op == "get_attr" and graph.owning_module is not None:
            sub = operator.attrgetter(node.target)(graph.owning_module)
            if isinstance(sub, fx.GraphModule):
                found.update(find_attention(sub.graph))
    return found


def format_chains(chains: dict[fx.Node, AttentionChain]) -> str:
    """The dump of the stage: one line per chain."""
    lines = []
    for c in chains.values():
        mask = "" if c.mask is None else (
            f" + {c.mask.name}" if c.mask_fill is None
            else f" masked_fill({c.mask.name}, {c.mask_fill:g})")
        lines.append(f"{c.output.name} = attention({c.query.name}, {c.key_t.name}^T, "
                     f"{c.value.name}) scale={c.scale:g}{mask} [{', '.join(n.name for n in c.inner)}]")
    return "\n".join(lines) + ("\n" if lines else "")
