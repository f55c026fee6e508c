"""Attention onto the Attention template: aten.scaled_dot_product_attention, and the
matmul -> scale -> mask -> softmax -> matmul chains that passes/attention.py finds.

q, k, v and the mask are read in place through strides where they are strided views of a
buffer (a head split by reshape + transpose costs nothing); grouped-query attention is read
from k and v's own heads, whether given with enable_gqa or by repeating heads
(expand + reshape, as LLaMA's repeat_kv). Half inputs are widened to float32 for the
template. A float16/bfloat16 SDPA rounds where eager's kernel for it does: PyTorch runs its
CPU flash-attention kernel (which rounds the probabilities to the input type, after a fast
exp) or its math path (float32 throughout, rounded once), and which one is asked of PyTorch
at compile time with tensors of the exported sizes, dtypes and last strides.
"""
from __future__ import annotations

import functools
import math

import sympy
import torch
from torch.nn.attention import SDPBackend

from ..dtypes import DType
from ..errors import UnsupportedOperatorError
from ..ir.expr import Cast, Load, cast, substitute_index
from ..ir.nodes import Attention, MaskKind, Operand, Pointwise
from ..ir.symbols import index_vars, numel, simplify_index
from .common import broadcast_index
from .context import LoweringContext, TensorValue
from .linalg import strided_view
from .opmath import HALF, involves_half, lower_in_float
from .registry import Decompose, register_lowering
from .views import lower_expand, remap, reshape_index

aten = torch.ops.aten
FAMILY = "attention"


def _as_4d(x: TensorValue) -> TensorValue:
    """x (*lead, n, d) viewed as (batch, heads, n, d): the lead dims but the last merge."""
    lead = x.sizes[:-2]
    heads = lead[-1] if lead else sympy.Integer(1)
    sizes = (numel(lead[:-1]), heads) + tuple(x.sizes[-2:])
    if tuple(x.sizes) == sizes:
        return x
    return remap(x, sizes, reshape_index(x.sizes, sizes))


def _operand(ctx: LoweringContext, x: TensorValue, what: str) -> Operand:
    """x (4-D) as strides of a buffer, copied into one only when it reads no buffer that way."""
    view = strided_view(ctx, x)
    if view is None:
        x = ctx.pointwise(x.body, x.sizes, hint=f"{ctx.node_name}_{what}")
        view = strided_view(ctx, x)
        assert view is not None
    buf, offset, strides = view
    return Operand(buf, offset, tuple(strides))


def _repeated_heads(ctx: LoweringContext, x: TensorValue) -> tuple[TensorValue, int] | None:
    """(the value over its distinct heads, the repeat) when head h of x is head h // g of a
    strided view for some g > 1: the expand + reshape of grouped-query attention."""
    heads = x.sizes[1]
    if not heads.is_Integer:
        return None
    i0, i1, i2, i3 = index_vars(4)
    r = sympy.Symbol("r_head", integer=True, nonnegative=True)
    for g in range(2, int(heads) + 1):
        if int(heads) % g:
            continue
        ranges = {i0: x.sizes[0], i1: sympy.Integer(int(heads) // g), i2: x.sizes[2],
                  i3: x.sizes[3], r: sympy.Integer(g)}
        first = x.load((i0, g * i1, i2, i3))
        again = x.load((i0, g * i1 + r, i2, i3))
        if _simplified(first, ranges) != _simplified(again, ranges):
            continue
        distinct = remap(x, (x.sizes[0], ranges[i1], x.sizes[2], x.sizes[3]),
                         (i0, g * i1, i2, i3))
        # a widened half cache is read once per distinct head (the operand copies only those)
        if strided_view(ctx, distinct) is not None or isinstance(distinct.body, Cast):
            return distinct, g
    return None


def _copy_of_load(ctx: LoweringContext, x: TensorValue) -> TensorValue | None:
    """x read from what it copies, when x reads a buffer that only re-reads another one."""
    if not isinstance(x.body, Load):
        return None
    buf = ctx.program.buffers[x.body.buffer]
    op = buf.op
    if isinstance(op, Pointwise) and isinstance(op.body, Load) and op.body.dtype is x.dtype:
        inner = dict(zip(index_vars(len(buf.sizes)), x.body.index))
        return TensorValue(x.sizes, x.dtype, substitute_index(op.body, inner))
    return None


def _simplified(node, ranges):
    if isinstance(node, Cast):
        return Cast(_simplified(node.x, ranges), node.dtype)
    if isinstance(node, Load):
        return Load(node.buffer, tuple(simplify_index(sympy.expand(e), ranges)
                                       for e in node.index), node.dtype)
    return node


def _kv_operand(ctx: LoweringContext, x: TensorValue, heads: sympy.Expr,
                what: str) -> tuple[Operand, sympy.Expr]:
    """k or v (4-D) as an operand over its own heads, and the query heads per head."""
    if x.sizes[1] != heads:  # enable_gqa: fewer key/value heads than query heads
        return _operand(ctx, x, what), sympy.simplify(heads / x.sizes[1])
    if strided_view(ctx, x) is None or _copy_of_load(ctx, x) is not None:
        # a copy (repeat_interleave's clone) is read through: DCE drops it when unused
        repeated = _repeated_heads(ctx, _copy_of_load(ctx, x) or x)
        if repeated is not None:
            return _operand(ctx, repeated[0], what), sympy.Integer(repeated[1])
    return _operand(ctx, x, what), sympy.Integer(1)


def attention(ctx: LoweringContext, q: TensorValue, k: TensorValue, v: TensorValue,
              mask: TensorValue | None, *, scale: float, causal: bool = False,
              fill_when: bool = False, fill: float = float("-inf"),
              empty_rows_nan: bool = False, probs: DType = DType.float32) -> TensorValue:
    """softmax(scale * q @ k^T, masked) @ v for q (*lead, Lq, E), k (*lead_k, Lk, E) and v
    (*lead_k, Lk, Ev), lead dims broadcast to the output's; a float mask is added to the
    scores, a bool one replaces them by `fill` where it equals `fill_when`. `probs` a half
    type: PyTorch's CPU flash arithmetic for inputs of that type (ir.nodes.Attention)."""
    for t, name in ((q, "query"), (k, "key"), (v, "value")):
        if t.dtype is not DType.float32:
            raise UnsupportedOperatorError(ctx.target, ctx.source,
                                           f"attention of a {t.dtype.name} {name} (float32, "
                                           "float16 and bfloat16 are compiled)")
        if t.ndim < 2:
            raise UnsupportedOperatorError(ctx.target, ctx.source, f"a {t.ndim}-D {name}")
    out = tuple(ctx.out_sizes)
    lead = out[:-2]
    q4 = _as_4d(lower_expand(ctx, q, list(lead) + list(q.sizes[-2:])))
    heads = q4.sizes[1]

    def kv_lead(t: TensorValue) -> list:
        own = list(lead)
        if t.ndim >= 3 and len(lead) >= 1 and t.sizes[-3] != lead[-1] and t.sizes[-3] != 1:
            own[-1] = t.sizes[-3]  # grouped heads: keep them, do not broadcast
        return own + list(t.sizes[-2:])

    k4 = _as_4d(lower_expand(ctx, k, kv_lead(k)))
    v4 = _as_4d(lower_expand(ctx, v, kv_lead(v)))
    qo = _operand(ctx, q4, "query")
    ko, group = _kv_operand(ctx, k4, heads, "key")
    vo, v_group = _kv_operand(ctx, v4, heads, "value")
    if sympy.simplify(group - v_group) != 0:
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       "keys and values with different head groups")
    mo, kind = None, MaskKind.NONE
    if mask is not None:
        scores = tuple(lead) + (q.sizes[-2], k.sizes[-2])
        m = remap(mask, scores, broadcast_index(mask.sizes, scores))
        if m.dtype is DType.bool:
            kind = MaskKind.BOOL
        else:
            kind = MaskKind.ADD
            if m.dtype is not DType.float32:
                m = TensorValue(m.sizes, DType.float32, cast(m.body, DType.float32))
        mo = _operand(ctx, _as_4d(m), "mask")
    op = Attention(qo, ko, vo, mo, q4.sizes[0], heads, group, q4.sizes[2], k4.sizes[2],
                   q4.sizes[3], v4.sizes[3], float(scale), causal, kind, fill_when,
                   float(fill), empty_rows_nan, probs)
    return ctx.emit(op, out, DType.float32)


def _hint(n) -> int:
    """A size or stride export recorded, as the int of its example."""
    if isinstance(n, torch.SymInt):
        hint = n.node.hint
        return int(hint) if hint is not None else 2
    return int(n)


def _stand_in(x):
    """A tensor with x's sizes, dtype and last stride (the strides eager's kernel choice
    reads), over a few bytes: the leading strides are 0."""
    if not isinstance(x, torch.Tensor):
        return x
    if x.ndim == 0:
        return torch.empty((), dtype=x.dtype)
    strides = [0] * (x.ndim - 1) + [_hint(x.stride(-1))]
    return torch.empty_strided([_hint(s) for s in x.shape], strides, dtype=x.dtype)


def eager_uses_flash(ctx: LoweringContext) -> bool:
    """Whether eager runs this SDPA call on PyTorch's CPU flash-attention kernel (else on
    its math path), as PyTorch's own backend choice answers for the exported arguments (with
    this process's torch.backends settings)."""
    if not ctx.example_args:
        return False
    args = [_stand_in(a) for a in ctx.example_args]
    kwargs = {k: _stand_in(a) for k, a in ctx.example_kwargs.items()}
    try:
        choice = torch._fused_sdp_choice(*args, **kwargs)
    except RuntimeError:  # no backend takes the call: eager would fail too
        return False
    return choice == SDPBackend.FLASH_ATTENTION.value


@register_lowering(aten.scaled_dot_product_attention.default, family=FAMILY,
                   in_storage_type=True)
def lower_sdpa(ctx, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *,
               scale=None, enable_gqa=False):
    if any(t.dtype not in (DType.float32,) + HALF for t in (query, key, value)):
        raise Decompose()  # float64: the math decomposition's products and softmax
    probs = DType.float32
    if query.dtype in HALF and eager_uses_flash(ctx):
        probs = query.dtype
    rule = functools.partial(_sdpa, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                             probs=probs)
    args = (query, key, value, attn_mask)
    if involves_half(ctx, args, {}):
        return lower_in_float(rule, ctx, args, {})
    return rule(ctx, *args)


def _sdpa(ctx, query, key, value, attn_mask, *, dropout_p, is_causal, scale, probs):
    if dropout_p != 0.0:
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       f"dropout_p={dropout_p}: aotc compiles inference "
                                       "(export in eval mode, or pass dropout_p=0)")
    if scale is None:
        e = query.sizes[-1]
        if not e.is_Integer:
            raise UnsupportedOperatorError(ctx.target, ctx.source,
                                           "a symbolic head dim needs an explicit scale")
        scale = 1.0 / math.sqrt(int(e))
    return attention(ctx, query, key, value, attn_mask, scale=float(scale),
                     causal=bool(is_causal), probs=probs)


def lower_attention_chain(ctx: LoweringContext, query: TensorValue, key_t: TensorValue,
                          value: TensorValue, mask: TensorValue | None, *, scale: float,
                          fill: float | None, empty_rows_nan: bool) -> TensorValue:
    """matmul(softmax(mask(scale * query @ key_t)), value), a chain that
    passes/attention.py found: a float mask is added; with `fill`, a bool mask is a
    masked_fill of the scores by `fill` where it is true."""
    iv = index_vars(key_t.ndim)
    sizes = tuple(key_t.sizes[:-2]) + (key_t.sizes[-1], key_t.sizes[-2])
    key = remap(key_t, sizes, tuple(iv[:-2]) + (iv[-1], iv[-2]))
    if fill is None:
        return attention(ctx, query, key, value, mask, scale=scale, empty_rows_nan=empty_rows_nan)
    return attention(ctx, query, key, value, mask, scale=scale, fill_when=True, fill=fill,
                     empty_rows_nan=empty_rows_nan)
