"""Matrix products: mm/addmm/bmm/addbmm/linear/matmul onto the GEMM template; cdist, pdist.

float32 products become a Gemm template reading strided operands in place (a transposed
weight costs nothing); other dtypes lower to a sum reduction.
"""
from __future__ import annotations

import math
from dataclasses import replace

import sympy
import torch

from ..dtypes import DType
from ..errors import CompileError, UnsupportedOperatorError
from ..ir.expr import Binary, BinaryOp, Load, Node, Unary, UnaryOp, cast, constant
from ..ir.nodes import Gemm, Operand, ReduceType, Reduction
from ..ir.symbols import (
    FloorDiv,
    ModIndex,
    flat_offset,
    index_vars,
    numel,
    reduction_var,
    simplify_index,
)
from .common import broadcast_index, promote
from .common import operand as elem
from .context import LoweringContext, TensorValue
from .registry import register_lowering
from .views import lower_expand, lower_unsqueeze, remap, reshape_index

aten = torch.ops.aten
FAMILY = "linalg"
ZERO = sympy.Integer(0)


def strided_view(ctx: LoweringContext, x: TensorValue):
    """(buffer, offset, strides) when `x` reads one buffer at an affine offset, else None."""
    b = x.body
    if not isinstance(b, Load):
        return None
    buf = ctx.program.buffers[b.buffer]
    iv = index_vars(x.ndim)
    flat = simplify_index(flat_offset(b.index, buf.sizes), dict(zip(iv, x.sizes)))
    # divisions of shape symbols alone (a conv's output length) are fine in a stride
    if any(f.has(*iv) for f in flat.atoms(FloorDiv, ModIndex, sympy.Min, sympy.Max)):
        return None
    flat = sympy.expand(flat)
    strides = []
    for v in iv:
        c = flat.coeff(v)
        if c.has(*iv):
            return None
        strides.append(c)
    return b.buffer, flat.xreplace({v: 0 for v in iv}), strides


def _merged_stride(sizes, strides) -> sympy.Expr | None:
    """The one stride of `sizes` merged into a single dim, when evenly spaced, else None."""
    dims = [(sz, st) for sz, st in zip(sizes, strides) if sz != 1]
    if not dims:
        return sympy.Integer(0)
    for (_, outer), (inner_size, inner) in zip(dims, dims[1:]):
        if sympy.simplify(outer - inner * inner_size) != 0:
            return None
    return dims[-1][1]


def operand(ctx: LoweringContext, x: TensorValue, n_lead: int, lead_is_rows=False) -> Operand:
    """x as (batch, row, col) strides of a buffer, its first `n_lead` dims merged into the
    batch (or, with lead_is_rows, into the rows); copies x only when it must."""
    view = strided_view(ctx, x)
    if view is not None:
        buf, offset, strides = view
        lead = _merged_stride(x.sizes[:n_lead], strides[:n_lead])
        if lead is not None:
            if lead_is_rows:
                return Operand(buf, offset, (ZERO, lead, strides[-1]))
            return Operand(buf, offset, (lead,) + tuple(strides[n_lead:]))
    if x.buffer_name() is not None:  # a contiguous buffer that is still no strided view
        raise CompileError(f"{ctx.target}: cannot read operand of sizes {x.sizes} with strides")
    x = ctx.pointwise(x.body, x.sizes, hint=f"{ctx.node_name}_operand")
    return operand(ctx, x, n_lead, lead_is_rows)


def _gemm(ctx: LoweringContext, a: Operand, b: Operand, bias: Operand | None, batch, m, n, k,
          out, alpha=1, beta=1) -> TensorValue:
    gemm = Gemm(a, b, bias, batch, m, n, k, float(alpha), float(beta))
    return ctx.emit(gemm, out, DType.float32)


def reduction_matmul(ctx, a: TensorValue, b: TensorValue, out, d: DType) -> TensorValue:
    """Any-dtype batched product as a sum over k; a and b already share batch dims."""
    iv = index_vars(len(out))
    r = reduction_var(0)
    nb = len(out) - 2
    ai = tuple(iv[:nb]) + (iv[nb], r)
    bi = tuple(iv[:nb]) + (r, iv[nb + 1])
    body = Binary(BinaryOp.MUL, cast(a.load(ai), d), cast(b.load(bi), d), d)
    return ctx.emit(Reduction(ReduceType.SUM, (a.sizes[-1],), body), out, d)


def matmul(ctx, a: TensorValue, b: TensorValue, out, bias=None, alpha=1, beta=1) -> TensorValue:
    """a (*, M, K) @ b (*, K, N) with broadcast batch dims, into sizes `out`."""
    out = tuple(out)
    nb = len(out) - 2
    a = lower_expand(ctx, a, list(out[:nb]) + list(a.sizes[-2:]))
    b = lower_expand(ctx, b, list(out[:nb]) + list(b.sizes[-2:]))
    d = promote(a, b)
    if d is DType.float32:
        bias_o = None
        if bias is not None:
            bias_o = operand(ctx, remap(bias, out, broadcast_index(bias.sizes, out)), nb)
        return _gemm(ctx, operand(ctx, a, nb), operand(ctx, b, nb), bias_o, numel(out[:nb]),
                     a.sizes[-2], b.sizes[-1], a.sizes[-1], out, alpha, beta)
    res = reduction_matmul(ctx, a, b, out, d)
    if bias is None:
        return res
    scaled = [Binary(BinaryOp.MUL, elem(v, d, out), elem(c, d, out), d)
              for v, c in ((res, alpha), (bias, beta))]
    return ctx.pointwise(Binary(BinaryOp.ADD, scaled[0], scaled[1], d), out)


@register_lowering(aten.mm.default, aten.bmm.default, family=FAMILY)
def lower_mm(ctx, a, b):
    return matmul(ctx, a, b, ctx.out_sizes)


@register_lowering(aten.addmm.default, aten.baddbmm.default, family=FAMILY)
def lower_addmm(ctx, bias, a, b, *, beta=1, alpha=1):
    return matmul(ctx, a, b, ctx.out_sizes, bias, alpha, beta)


def _transpose2d(w: TensorValue) -> TensorValue:
    i0, i1 = index_vars(2)
    return remap(w, (w.sizes[1], w.sizes[0]), (i1, i0))


def rows_matmul(ctx, x: TensorValue, w: TensorValue, bias=None) -> TensorValue:
    """x (..., K) @ w (K, N) + bias: the leading dims of x merge into the GEMM's rows, and
    the (rows, N) result is already the (..., N) output."""
    out = tuple(x.sizes[:-1]) + (w.sizes[1],)
    if promote(x, w) is not DType.float32 or x.ndim < 2:
        m = numel(x.sizes[:-1])
        x2 = remap(x, (m, x.sizes[-1]), reshape_index(x.sizes, (m, x.sizes[-1])))
        res = matmul(ctx, x2, w, (m, w.sizes[1]), bias)
        return remap(res, out, reshape_index(res.sizes, out))
    bias_o = None
    if bias is not None:
        bias_o = operand(ctx, remap(bias, out, broadcast_index(bias.sizes, out)), x.ndim - 1,
                         lead_is_rows=True)
    return _gemm(ctx, operand(ctx, x, x.ndim - 1, lead_is_rows=True), operand(ctx, w, 0), bias_o,
                 1, numel(x.sizes[:-1]), w.sizes[1], x.sizes[-1], out)


@register_lowering(aten.addbmm.default, family=FAMILY)
def lower_addbmm(ctx, bias, b1, b2, *, beta=1, alpha=1):
    """beta * bias + alpha * (the sum over the batch of b1[i] @ b2[i]), as one product of
    b1 read as (M, B*K) (batch-major columns) with b2 read as (B*K, N)."""
    nb, m, k = b1.sizes
    n = b2.sizes[2]
    i, j = index_vars(2)
    a = remap(b1, (m, nb * k), (FloorDiv(j, k), i, ModIndex(j, k)))
    b = remap(b2, (nb * k, n), (FloorDiv(i, k), ModIndex(i, k), j))
    return matmul(ctx, a, b, ctx.out_sizes, bias, alpha, beta)


@register_lowering(aten.cdist.default, aten._cdist_forward.default, family=FAMILY)
def lower_cdist(ctx, x1, x2, p=2.0, compute_mode=None):
    """The p-norm distance of every row pair, summed directly over the features (torch may
    use a matmul for p=2: the same value, less accurately)."""
    out = ctx.out_sizes
    d = ctx.out_dtype.compute
    nb = len(out) - 2
    iv, k = index_vars(len(out)), reduction_var(0)

    def row(x: TensorValue, dim: int):
        lead = [iv[nb - (x.ndim - 2) + j] if x.sizes[j] != 1 else ZERO for j in range(x.ndim - 2)]
        return cast(x.load(tuple(lead) + (iv[dim], k)), d)

    diff = Unary(UnaryOp.ABS, Binary(BinaryOp.SUB, row(x1, nb), row(x2, nb + 1), d), d)
    p = float(p)
    total = ctx.emit(Reduction(norm_reduce_type(p), (x1.sizes[-1],), norm_term(diff, p, d)),
                     out, d, "cdist_sum")
    if p in (0, 1, math.inf):
        return total if d is ctx.out_dtype else ctx.pointwise(cast(total.body, ctx.out_dtype))
    return ctx.pointwise(cast(norm_root(total.body, p, d), ctx.out_dtype))


def norm_term(magnitude: Node, p: float, d: DType) -> Node:
    """What a p-norm reduces of each |element|: its power p, or (p = 0) whether it is
    nonzero."""
    if p == 0:
        return cast(Binary(BinaryOp.NE, magnitude, constant(0, d), DType.bool), d)
    if p in (1, math.inf):
        return magnitude
    return Binary(BinaryOp.POW, magnitude, constant(p, d), d)


def norm_reduce_type(p: float) -> ReduceType:
    return ReduceType.MAX if p == math.inf else ReduceType.SUM


def norm_root(total: Node, p: float, d: DType) -> Node:
    """The p-norm from the reduced terms."""
    if p in (0, 1, math.inf):
        return total
    if p == 2:
        return Unary(UnaryOp.SQRT, total, d)
    return Binary(BinaryOp.POW, total, constant(1 / p, d), d)


@register_lowering(aten.pdist.default, aten._pdist_forward.default, family=FAMILY)
def lower_pdist(ctx, x, p=2.0):
    """The distances of rows i < j in row-major pair order: cdist of x with itself, read
    through the upper triangle's (i, j) pairs (folded into constants: the row count is
    static)."""
    from .creation import lower_triangle_indices
    from .indexing import read_indirect

    n = x.sizes[0]
    if not n.is_number:
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       "the row count must be known when compiling")
    if int(n) < 2:  # no pairs
        return ctx.pointwise(constant(0, ctx.out_dtype))
    full = lower_cdist(replace(ctx, out_sizes=(n, n)), x, x, p)
    pairs = lower_triangle_indices(replace(ctx, target="aten.triu_indices", out_dtype=DType.int64),
                                   int(n), int(n), 1)
    m = index_vars(1)[0]
    ij = [pairs.load((sympy.Integer(k), m)) for k in (0, 1)]
    return read_indirect(ctx, full, [None, None], ij)


@register_lowering(aten._trilinear.default, family=FAMILY)
def lower_trilinear(ctx, i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    """The sum over `sumdim` of i1 * i2 * i3, each first given size-1 dims at its `expand`
    positions (F.bilinear's form); the summed dims leave the result."""
    total = i1.ndim + len(expand1)
    d = ctx.out_dtype
    kept = [k for k in range(total) if k not in sumdim]
    iv, rv = index_vars(len(kept)), [reduction_var(j) for j in range(len(sumdim))]
    var = {k: iv[kept.index(k)] if k in kept else rv[sorted(sumdim).index(k)] for k in range(total)}
    sizes: dict[int, sympy.Expr] = {}

    def read(t, expand):
        dims = [k for k in range(total) if k not in expand]
        for k, n in zip(dims, t.sizes):
            if n != 1:
                sizes[k] = n
        return cast(t.load(tuple(var[k] if n != 1 else ZERO for k, n in zip(dims, t.sizes))), d)

    body: Node = read(i1, expand1)
    for t, e in ((i2, expand2), (i3, expand3)):
        body = Binary(BinaryOp.MUL, body, read(t, e), d)
    ranges = tuple(sizes.get(k, sympy.Integer(1)) for k in sorted(sumdim))
    return ctx.emit(Reduction(ReduceType.SUM, ranges, body), ctx.out_sizes, d)


@register_lowering(aten.linear.default, family=FAMILY)
def lower_linear(ctx, x, w, bias=None):
    return rows_matmul(ctx, x, _transpose2d(w), bias)


@register_lowering(aten.matmul.default, family=FAMILY)
def lower_matmul(ctx, a, b):
    if a.ndim >= 2 and b.ndim == 2:
        return rows_matmul(ctx, a, b)
    a2 = lower_unsqueeze(ctx, a, 0) if a.ndim == 1 else a
    b2 = lower_unsqueeze(ctx, b, 1) if b.ndim == 1 else b
    nb = max(a2.ndim, b2.ndim) - 2
    # a 1-D operand's unit dim is not in the output: the batch dims then end one earlier
    batch = (ctx.out_sizes if a.ndim > 1 and b.ndim > 1 else ctx.out_sizes[:-1])[:nb]
    res = matmul(ctx, a2, b2, tuple(batch) + (a2.sizes[-2], b2.sizes[-1]))
    return remap(res, ctx.out_sizes, reshape_index(res.sizes, ctx.out_sizes))
