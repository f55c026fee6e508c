"""View lowerings: no data moves, each folds into the index of the Loads that read it.

Also cat/split, whose results are index arithmetic over their inputs.
"""
from __future__ import annotations

from collections.abc import Sequence

import sympy
import torch

from ..dtypes import DType
from ..errors import CompileError, UnsupportedOperatorError
from ..ir.expr import Binary, BinaryOp, IndexValue, Node, Where, cast, constant, simplify_loads
from ..ir.symbols import FloorDiv, ModIndex, contiguous_strides, index_vars, numel, surely_at_least
from .common import dim_index
from .context import LoweringContext, TensorValue
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "views"
ZERO = sympy.Integer(0)


def remap(x: TensorValue, sizes: Sequence, src_index: Sequence) -> TensorValue:
    """A view of `x` with `sizes` whose element (i...) is x[src_index]."""
    sizes = tuple(sympy.sympify(s) for s in sizes)
    body = simplify_loads(x.load(src_index), dict(zip(index_vars(len(sizes)), sizes)))
    return TensorValue(sizes, x.dtype, body, x.base_sizes)


@register_lowering(aten.alias.default, aten.detach.default, aten.lift_fresh.default,
                   family=FAMILY)
def lower_alias(ctx, x):
    return x


@register_lowering(aten.permute.default, family=FAMILY)
def lower_permute(ctx, x, dims):
    dims = [dim_index(d, x.ndim) for d in dims]
    iv = index_vars(x.ndim)
    src = [ZERO] * x.ndim
    for k, d in enumerate(dims):
        src[d] = iv[k]
    return remap(x, [x.sizes[d] for d in dims], src)


@register_lowering(aten.transpose.int, family=FAMILY)
def lower_transpose(ctx, x, d0, d1):
    perm = list(range(x.ndim))
    if x.ndim:
        a, b = dim_index(d0, x.ndim), dim_index(d1, x.ndim)
        perm[a], perm[b] = perm[b], perm[a]
    return lower_permute(ctx, x, perm)


@register_lowering(aten.t.default, family=FAMILY)
def lower_t(ctx, x):
    return lower_transpose(ctx, x, 0, 1) if x.ndim == 2 else x


@register_lowering(aten.expand.default, family=FAMILY)
def lower_expand(ctx, x, sizes, implicit=False):
    lead = len(sizes) - x.ndim
    iv = index_vars(len(sizes))
    out, src = [], []
    for k, s in enumerate(sizes):
        if k < lead:
            out.append(sympy.sympify(s))
            continue
        old = x.sizes[k - lead]
        new = old if (not isinstance(s, sympy.Expr) and s == -1) else sympy.sympify(s)
        out.append(new)
        src.append(ZERO if (old == 1 and new != 1) else iv[k])
    return remap(x, out, src)


@register_lowering(torch.ops.prims.broadcast_in_dim.default, family=FAMILY)
def lower_broadcast_in_dim(ctx, x, shape, broadcast_dimensions):
    """x's dim k becomes dim broadcast_dimensions[k] of `shape` (size 1 broadcasts); the
    other dims are new (what meshgrid's and other decompositions produce)."""
    iv = index_vars(len(shape))
    src = [ZERO if (x.sizes[k] == 1 and sympy.sympify(shape[d]) != 1) else iv[d]
           for k, d in enumerate(broadcast_dimensions)]
    return remap(x, shape, src)


@register_lowering(aten.unsqueeze.default, family=FAMILY)
def lower_unsqueeze(ctx, x, dim):
    dim = dim_index(dim, x.ndim + 1)
    iv = index_vars(x.ndim + 1)
    return remap(x, x.sizes[:dim] + (sympy.Integer(1),) + x.sizes[dim:], iv[:dim] + iv[dim + 1:])


@register_lowering(aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims, family=FAMILY)
def lower_squeeze(ctx, x, dims=None):
    if dims is None:
        dims = range(x.ndim)
    elif isinstance(dims, int):
        dims = [dims]
    if x.ndim == 0:  # a 0-dim tensor accepts dim 0 and -1 and stays as it is
        return x
    drop = {dim_index(d, x.ndim) for d in dims if x.sizes[dim_index(d, x.ndim)] == 1}
    keep = [k for k in range(x.ndim) if k not in drop]
    iv = iter(index_vars(len(keep)))
    src = [ZERO if k in drop else next(iv) for k in range(x.ndim)]
    return remap(x, [x.sizes[k] for k in keep], src)


@register_lowering(aten.select.int, family=FAMILY)
def lower_select(ctx, x, dim, index):
    dim = dim_index(dim, x.ndim)
    index = sympy.sympify(index)
    if index.is_number:  # past a dynamic size eager raises: so does the run
        size = x.sizes[dim]
        inside = (sympy.Gt(size, index, evaluate=False) if index >= 0
                  else sympy.Ge(size, -index, evaluate=False))
        ctx.require(inside, f"select(): index {index} out of range for a tensor whose dim "
                    f"{dim} is {size} (smaller for these inputs)")
    if index.is_number and index < 0:
        index = index + x.sizes[dim]
    iv = index_vars(x.ndim - 1)
    return remap(x, x.sizes[:dim] + x.sizes[dim + 1:], iv[:dim] + (index,) + iv[dim:])


@register_lowering(aten.slice.Tensor, family=FAMILY)
def lower_slice(ctx, x, dim=0, start=None, end=None, step=1):
    dim = dim_index(dim, x.ndim)
    size = x.sizes[dim]
    start = sympy.sympify(0 if start is None else start)
    if start.is_number and start < 0:
        start = sympy.Max(start + size, 0)
    out_sizes = ctx.out_sizes
    _bind_slice_length(ctx, out_sizes[dim], size, start, end, step)
    iv = index_vars(x.ndim)
    src = list(iv)
    src[dim] = start + iv[dim] * step
    return remap(x, out_sizes, src)


def diagonal_index(ndim: int, offset: int, dim1: int, dim2: int) -> tuple:
    """(dim1, dim2, the source index of each element of the diagonal view): its dims are
    x's without dim1 and dim2, then the diagonal k, which is x[.., k (+|offset|), ..]."""
    dim1, dim2 = dim_index(dim1, ndim), dim_index(dim2, ndim)
    if dim1 == dim2:
        raise CompileError(f"diagonal: dim1 and dim2 are both {dim1}")
    iv = index_vars(ndim - 1)
    rest, k = iter(iv[:-1]), iv[-1]
    src = [sympy.Integer(0)] * ndim
    for d in range(ndim):
        if d not in (dim1, dim2):
            src[d] = next(rest)
    src[dim1] = k - min(offset, 0)
    src[dim2] = k + max(offset, 0)
    return dim1, dim2, tuple(src)


@register_lowering(aten.diagonal.default, aten.diagonal_copy.default, family=FAMILY)
def lower_diagonal(ctx, x, offset=0, dim1=0, dim2=1):
    _, _, src = diagonal_index(x.ndim, int(offset), dim1, dim2)
    return remap(x, ctx.out_sizes, src)


def _bind_slice_length(ctx, length, size, start, end, step) -> None:
    """A slice whose bounds are `.item()` values has a length export leaves as a fresh
    unbacked symbol: it binds to Python's slice length, computed from those values."""
    from torch.utils._sympy.symbol import SymT, symbol_is_type

    if not (isinstance(length, sympy.Symbol) and symbol_is_type(length, SymT.UNBACKED_INT)
            and length not in ctx.program.item_symbols):
        return
    def clamp(v):
        v = sympy.sympify(v)
        return sympy.Piecewise((sympy.Max(v + size, 0), v < 0), (sympy.Min(v, size), True))

    first = clamp(start)
    last = size if end is None else clamp(end)
    value = sympy.Max(0, FloorDiv(last - first + int(step) - 1, int(step)))
    ctx.program.item_symbols[length] = IndexValue(value, DType.int64)
    ctx.program.symbols.setdefault(length, (0, None))


@register_lowering(aten.narrow.default, family=FAMILY)
def lower_narrow(ctx, x, dim, start, length):
    """x[start:start + length] along dim; the length may be a data-dependent symbol."""
    dim = dim_index(dim, x.ndim)
    start = sympy.sympify(start)
    if start.is_number and start < 0:
        start = start + x.sizes[dim]
    iv = index_vars(x.ndim)
    src = list(iv)
    src[dim] = start + iv[dim]
    return remap(x, ctx.out_sizes, src)


def _split_sizes(total, split_size) -> list:
    sizes, done = [], sympy.Integer(0)
    n = 0
    while True:
        rest = total - done
        if rest.is_number and rest <= 0:
            break
        step = sympy.Min(split_size, rest) if not rest.is_number else min(split_size, rest)
        sizes.append(sympy.sympify(step))
        done = done + split_size
        n += 1
        if n > 4096:
            raise CompileError("split: the split count is not known at compile time")
    return sizes or [sympy.Integer(0)]


@register_lowering(aten.split.Tensor, aten.split_with_sizes.default, family=FAMILY)
def lower_split(ctx, x, split, dim=0):
    dim = dim_index(dim, x.ndim)
    sizes = [sympy.sympify(s) for s in split] if isinstance(split, (list, tuple)) \
        else _split_sizes(x.sizes[dim], split)
    outs, start = [], sympy.Integer(0)
    iv = index_vars(x.ndim)
    for s in sizes:
        src = list(iv)
        src[dim] = start + iv[dim]
        outs.append(remap(x, x.sizes[:dim] + (s,) + x.sizes[dim + 1:], src))
        start = start + s
    return tuple(outs)


@register_lowering(aten.unbind.int, family=FAMILY)
def lower_unbind(ctx, x, dim=0):
    dim = dim_index(dim, x.ndim)
    n = x.sizes[dim]
    if not n.is_number:
        raise CompileError("unbind over a dynamic dimension")
    return tuple(lower_select(ctx, x, dim, k) for k in range(int(n)))


# ---- reshape -------------------------------------------------------------------------------

def _infer_sizes(x: TensorValue, sizes) -> list:
    sizes = [sympy.sympify(s) for s in sizes]
    if any(s == -1 for s in sizes):
        known = numel(tuple(s for s in sizes if s != -1))
        sizes = [sympy.simplify(numel(x.sizes) / known) if s == -1 else s for s in sizes]
    return sizes


def reshape_index(old: Sequence, new: Sequence) -> list:
    """The old index, as expressions of the new index variables, of a contiguous reshape.

    Axes are matched in groups of equal element count, so a split or a merge of adjacent
    axes gives simple indices; anything else reads through the flat offset.
    """
    iv = index_vars(len(new))
    src = [ZERO] * len(old)
    old_axes = [k for k, s in enumerate(old) if s != 1]
    new_axes = [k for k, s in enumerate(new) if s != 1]
    groups = _groups([old[k] for k in old_axes], [new[k] for k in new_axes])
    oi = ni = 0
    for n_old, n_new in groups:
        o_ax = old_axes[oi:oi + n_old]
        n_ax = new_axes[ni:ni + n_new]
        oi, ni = oi + n_old, ni + n_new
        n_sizes = tuple(new[k] for k in n_ax)
        flat = sum((iv[k] * st for k, st in zip(n_ax, contiguous_strides(n_sizes))), ZERO)
        o_sizes = tuple(old[k] for k in o_ax)
        for j, (k, st) in enumerate(zip(o_ax, contiguous_strides(o_sizes))):
            e = flat if n_old == 1 else FloorDiv(flat, st)
            src[k] = ModIndex(e, old[k]) if j > 0 else e
    return src


def _groups(old: list, new: list) -> list[tuple[int, int]]:
    """Pairs (#old axes, #new axes) of consecutive runs with equal products."""
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < len(old) and j < len(new):
        pa, pb, ni, nj = old[i], new[j], 1, 1
        while not _same_size(pa, pb):
            if _divides(pa, pb) and i + ni < len(old):
                pa, ni = pa * old[i + ni], ni + 1
            elif _divides(pb, pa) and j + nj < len(new):
                pb, nj = pb * new[j + nj], nj + 1
            else:  # no common refinement: the rest reads through one flat group
                return out + [(len(old) - i, len(new) - j)]
        out.append((ni, nj))
        i, j = i + ni, j + nj
    if i < len(old) or j < len(new):
        out.append((len(old) - i, len(new) - j))
    return out


def _same_size(a, b) -> bool:
    """a == b for sizes; sympy.simplify (slow, and its first call imports much of sympy)
    only when the expanded difference is not a polynomial (floor divisions, modulos)."""
    if a == b:
        return True
    d = sympy.expand(a - b)
    return d == 0 or (not d.is_polynomial() and sympy.simplify(d) == 0)


def _divides(a, b) -> bool:
    """a divides b (symbolically) and a != b."""
    if a == 0 or b == 0:  # empty dims: no refinement to find
        return False
    q = sympy.cancel(b / a)
    num, den = sympy.fraction(q)
    return den == 1 and q != 1 and (not q.is_number or q > 1)


def require_inferable(ctx: LoweringContext, sizes) -> None:
    """A -1 among the sizes of a reshape is ambiguous when the other sizes multiply to 0:
    eager raises ("cannot reshape tensor of 0 elements into shape [...] because the
    unspecified dimension size -1 can be any value"), and so does the run where a dynamic
    size may be 0."""
    if not any(_is_minus_one(s) for s in sizes):
        return
    known = numel(tuple(sympy.sympify(s) for s in sizes if not _is_minus_one(s)))
    shape = ", ".join(str(s) for s in sizes)
    ctx.require(sympy.Ne(known, 0, evaluate=False),
                f"cannot reshape into shape [{shape}]: the sizes other than -1 multiply to 0 "
                "for these inputs, so the -1 can be any value and is ambiguous")


def _is_minus_one(s) -> bool:
    return sympy.sympify(s) == -1


@register_lowering(aten.view.default, aten.reshape.default, aten._unsafe_view.default,
                   family=FAMILY)
def lower_view(ctx, x, sizes):
    require_inferable(ctx, sizes)
    # a -1 takes the size export inferred: the quotient of symbolic sizes often does not
    # simplify (padded sizes such as `h + (4 - h % 4) % 4` over their window count)
    if any(s == -1 for s in sizes) and len(ctx.out_sizes) == len(sizes):
        sizes = [o if s == -1 else s for s, o in zip(sizes, ctx.out_sizes)]
    sizes = _infer_sizes(x, sizes)
    return remap(x, sizes, reshape_index(x.sizes, sizes))


@register_lowering(aten.resize.default, family=FAMILY, in_storage_type=True)
def lower_resize(ctx, x, sizes, memory_format=None):
    """x.resize_(sizes) of a buffer: its first numel(sizes) elements in storage order, with
    the new sizes. Growing would expose uninitialized memory, and a view keeps its base's
    storage order, which its value does not record: both are refused."""
    new = tuple(sympy.sympify(s) for s in sizes)
    if not surely_at_least(numel(x.sizes) - numel(new), 0):
        raise UnsupportedOperatorError(ctx.target, ctx.source, "resize_ to more elements than "
                                       "the tensor holds leaves the new ones uninitialized")
    if x.buffer_name() is None:
        raise UnsupportedOperatorError(ctx.target, ctx.source, "resize_ of a view (its storage "
                                       "order is its base's); resize a clone")
    flat = remap(x, (numel(x.sizes),), reshape_index(x.sizes, (numel(x.sizes),)))
    first = remap(flat, (numel(new),), (index_vars(1)[0],))
    return remap(first, new, reshape_index(first.sizes, new))


@register_lowering(aten.flatten.using_ints, family=FAMILY)
def lower_flatten(ctx, x, start_dim=0, end_dim=-1):
    return lower_view(ctx, x, ctx.out_sizes)


@register_lowering(aten.unflatten.int, family=FAMILY)
def lower_unflatten(ctx, x, dim, sizes):
    require_inferable(ctx, sizes)
    return lower_view(ctx, x, ctx.out_sizes)


# ---- cat -----------------------------------------------------------------------------------

@register_lowering(aten.cat.default, family=FAMILY)
def lower_cat(ctx: LoweringContext, tensors, dim=0):
    d = ctx.out_dtype
    out_sizes = ctx.out_sizes
    dim = dim_index(dim, len(out_sizes))
    # legacy 1-D empty tensors and parts empty along `dim` add nothing; a kept empty part
    # would make the clamped index below -1, a read out of bounds
    parts = [t for t in tensors if not (t.ndim == 1 and t.sizes[0] == 0)
             and t.sizes[dim] != 0]
    if not parts:  # the result is empty too: no element is ever computed
        return ctx.pointwise(constant(0, d))
    iv = index_vars(len(out_sizes))
    pos = iv[dim]
    starts, acc = [], sympy.Integer(0)
    for t in parts:
        starts.append(acc)
        acc = acc + t.sizes[dim]
    body: Node | None = None
    for t, start in reversed(list(zip(parts, starts))):
        # clamp so that the branch not taken still reads in bounds
        local = sympy.Min(sympy.Max(pos - start, 0), t.sizes[dim] - 1)
        src = list(iv)
        src[dim] = local
        val = cast(t.load(src), d)
        if body is None:
            body = val
        else:
            end = start + t.sizes[dim]
            cond = Binary(BinaryOp.LT, IndexValue(pos, DType.int64), IndexValue(end, DType.int64),
                          DType.bool)
            body = Where(cond, val, body, d)
    assert body is not None  # parts is non-empty: empty pieces only were dropped
    return ctx.pointwise(body)


# ---- flip, roll and repeat: reversed, rotated and wrapped indices -------------------------

@register_lowering(aten.flip.default, family=FAMILY)
def lower_flip(ctx, x, dims):
    iv = index_vars(x.ndim)
    src = list(iv)
    for d in {dim_index(d, x.ndim) for d in dims} if x.ndim else ():
        src[d] = x.sizes[d] - 1 - iv[d]
    return remap(x, x.sizes, src)


@register_lowering(aten.roll.default, family=FAMILY)
def lower_roll(ctx, x, shifts, dims=()):
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if not dims:  # over the flattened tensor, then back to its shape
        flat = lower_view(ctx, x, [numel(x.sizes)])
        return lower_view(ctx, lower_roll(ctx, flat, shifts, [0]), list(x.sizes))
    iv = index_vars(x.ndim)
    src = list(iv)
    for shift, d in zip(shifts, dims):
        d = dim_index(d, x.ndim)
        n = x.sizes[d]
        if n == 0:
            continue
        # element i comes from (i - shift) mod n, written with a non-negative dividend
        # (a dynamic n is at least 1, so |shift| * n makes up for any negative shift)
        back = (-int(shift)) % int(n) if n.is_number else abs(int(shift)) * n - int(shift)
        src[d] = ModIndex(src[d] + back, n)
    return remap(x, x.sizes, src)


@register_lowering(aten.repeat.default, family=FAMILY)
def lower_repeat(ctx, x, repeats):
    """x tiled `repeats` times along each dim (new leading dims first): element i of a dim
    reads x's element i mod n. Written as an index map, not through torch's decomposition,
    which asks whether a repeat count is 0 and cannot answer for a .item() value."""
    lead = len(repeats) - x.ndim
    if lead < 0:
        raise UnsupportedOperatorError(ctx.target, ctx.source, "fewer repeats than dims")
    iv = index_vars(len(repeats))
    out, src = [], []
    for k, r in enumerate(repeats):
        n = x.sizes[k - lead] if k >= lead else sympy.Integer(1)
        out.append(sympy.expand(sympy.sympify(r) * n))
        if k < lead:
            continue
        r = sympy.sympify(r)
        src.append(ZERO if n == 1 else iv[k] if (r == 1 or n == 0) else ModIndex(iv[k], n))
    if ctx.out_sizes and len(ctx.out_sizes) == len(out):
        out = list(ctx.out_sizes)  # the export's own expressions for the same sizes
    return remap(x, out, src)


@register_lowering(aten.as_strided.default, family=FAMILY)
def lower_as_strided(ctx, x, size, stride, storage_offset=None):
    """A view with explicit strides into x's elements in row-major order: x's storage when x
    is a whole buffer (an input, a weight, an op's result), which aotc keeps contiguous."""
    if x.buffer_name() is None:
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       "as_strided of a view (its storage is another tensor's)")
    size = [sympy.sympify(n) for n in size]
    offset = sympy.sympify(storage_offset or 0)
    last = offset + sum(((n - 1) * sympy.sympify(st) for n, st in zip(size, stride)), ZERO)
    if not any(n == 0 for n in size) and not surely_at_least(numel(x.sizes), last + 1):
        raise UnsupportedOperatorError(ctx.target, ctx.source,
                                       "as_strided whose view may reach past the tensor's "
                                       f"{numel(x.sizes)} elements (last offset {last})")
    iv = index_vars(len(size))
    flat = offset + sum(
        (iv[k] * sympy.sympify(st) for k, st in enumerate(stride)), ZERO)
    src = [ModIndex(FloorDiv(flat, st), n) if k else FloorDiv(flat, st)
           for k, (n, st) in enumerate(zip(x.sizes, contiguous_strides(x.sizes)))]
    return remap(x, size, src)
