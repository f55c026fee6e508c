"""Complex views, copies, scatters and creation ops on (real, imag) pairs: the same op on the
pair tensor, its dims made non-negative (they then name the same dims of the pairs).
Registered in complex_ops.RULES; the arithmetic lives there."""
from __future__ import annotations

import torch

from .complex_ops import Pair, as_pair, make, pair_dim, pair_tensor, parts_dtype, real_dtype, rule

# ---- views and copies: the same on the pairs, dims made non-negative -------------------

@rule("view", "_unsafe_view", "reshape")
def reshape(out, x, size):
    return Pair(x.t.reshape([*size, 2]))


@rule("permute")
def permute(out, x, dims):
    return Pair(x.t.permute([*(pair_dim(d, x.ndim) for d in dims), x.ndim]))


@rule("transpose")
def transpose(out, x, dim0, dim1):
    if x.ndim == 0:  # its only dims are the scalar itself: no change
        return x
    return Pair(x.t.transpose(pair_dim(dim0, x.ndim), pair_dim(dim1, x.ndim)))


@rule("t")
def t(out, x):
    return Pair(x.t.transpose(0, 1)) if x.ndim == 2 else x


@rule("unsqueeze")
def unsqueeze(out, x, dim):
    return Pair(x.t.unsqueeze(pair_dim(dim, x.ndim + 1)))


@rule("squeeze")
def squeeze(out, x, dim=None):
    if dim is None:
        return Pair(x.t.reshape([*out.shape, 2]))
    dims = dim if isinstance(dim, (list, tuple)) else [dim]
    return Pair(x.t.squeeze([pair_dim(d, x.ndim) for d in dims]))


@rule("flatten")
def flatten(out, x, start_dim=0, end_dim=-1):
    return Pair(x.t.reshape([*out.shape, 2]))


@rule("unflatten")
def unflatten(out, x, dim, sizes):
    return Pair(x.t.unflatten(pair_dim(dim, x.ndim), sizes))


@rule("slice")
def slice_(out, x, dim=0, start=None, end=None, step=1):
    return Pair(torch.ops.aten.slice.Tensor(x.t, pair_dim(dim, x.ndim), start, end, step))


@rule("narrow")
def narrow(out, x, dim, start, length):
    return Pair(x.t.narrow(pair_dim(dim, x.ndim), start, length))


@rule("select")
def select(out, x, dim, index):
    return Pair(x.t.select(pair_dim(dim, x.ndim), index))


@rule("expand")
def expand(out, x, size, *, implicit=False):
    return Pair(x.t.expand([*size, 2]))


@rule("repeat")
def repeat(out, x, repeats):
    return Pair(x.t.repeat([*repeats, 1]))


@rule("flip")
def flip(out, x, dims):
    if x.ndim == 0:
        return Pair(x.t.clone())
    return Pair(x.t.flip([pair_dim(d, x.ndim) for d in dims]))


@rule("constant_pad_nd")
def constant_pad_nd(out, x, pad, value=0):
    v = complex(value)
    return make(torch.constant_pad_nd(x.re, pad, v.real), torch.constant_pad_nd(x.im, pad, v.imag))


@rule("index_select")
def index_select(out, x, dim, index):
    if x.ndim == 0:  # dim 0 is the scalar: picked (or not) as a tensor of one element
        return Pair(x.t.reshape(1, 2).index_select(0, index.reshape(-1)).reshape([*out.shape, 2]))
    return Pair(x.t.index_select(pair_dim(dim, x.ndim), index))


@rule("index")
def index(out, x, indices):
    return Pair(torch.ops.aten.index.Tensor(x.t, indices))


@rule("gather")
def gather(out, x, dim, index, *, sparse_grad=False):
    if x.ndim == 0:
        picked = x.t.reshape(1, 2).index_select(0, index.reshape(-1))
        return Pair(picked.reshape([*out.shape, 2]))
    return Pair(x.t.gather(pair_dim(dim, x.ndim), index.unsqueeze(-1).expand(*index.shape, 2)))


@rule("slice_scatter")
def slice_scatter(out, x, src, dim=0, start=None, end=None, step=1):
    dtype = parts_dtype(out)
    return Pair(torch.slice_scatter(pair_tensor(x, dtype), pair_tensor(src, dtype),
                                    pair_dim(dim, out.dim()), start, end, step))


@rule("select_scatter")
def select_scatter(out, x, src, dim, index):
    dtype = parts_dtype(out)
    return Pair(torch.select_scatter(pair_tensor(x, dtype), pair_tensor(src, dtype),
                                     pair_dim(dim, out.dim()), index))


@rule("index_copy")
def index_copy(out, x, dim, index, src):
    dtype = parts_dtype(out)
    if out.dim() == 0:  # dim 0 is the scalar itself: copied as a tensor of one element
        one = pair_tensor(x, dtype).reshape(1, 2)
        return Pair(one.index_copy(0, index.reshape(-1), pair_tensor(src, dtype).reshape(1, 2))
                    .reshape(2))
    return Pair(pair_tensor(x, dtype).index_copy(pair_dim(dim, out.dim()), index,
                                                 pair_tensor(src, dtype)))


@rule("index_put")
def index_put(out, x, indices, values, accumulate=False):
    dtype = parts_dtype(out)
    return Pair(torch.index_put(pair_tensor(x, dtype), indices, pair_tensor(values, dtype),
                                accumulate))


@rule("masked_fill")
def masked_fill(out, x, mask, value):
    dtype = parts_dtype(out)
    return Pair(torch.where(mask.unsqueeze(-1), pair_tensor(value, dtype), x.t.to(dtype)))


@rule("diagonal")
def diagonal(out, x, offset=0, dim1=0, dim2=1):
    """torch puts the diagonal's dim last: after the pairs' dim, moved back before it."""
    d = torch.diagonal(x.t, offset, pair_dim(dim1, x.ndim), pair_dim(dim2, x.ndim))
    return Pair(d.movedim(-1, -2))


@rule("unfold_backward")
def unfold_backward(out, grad, input_sizes, dim, size, step):
    """The windows' sum back into place (istft's overlap-add): the window dim torch puts last
    comes before the pairs' dim."""
    sizes = [*input_sizes, 2]
    return Pair(torch.ops.aten.unfold_backward(grad.t.movedim(-1, -2), sizes,
                                               pair_dim(dim, len(input_sizes)), size, step))


@rule("tril")
def tril(out, x, diagonal=0):
    return make(torch.tril(x.re, diagonal), torch.tril(x.im, diagonal))


@rule("triu")
def triu(out, x, diagonal=0):
    return make(torch.triu(x.re, diagonal), torch.triu(x.im, diagonal))


@rule("split", "split_with_sizes")
def split(out, x, split_size, dim=0):
    return [Pair(p) for p in x.t.split(split_size, pair_dim(dim, x.ndim))]


@rule("chunk")
def chunk(out, x, chunks, dim=0):
    return [Pair(p) for p in x.t.chunk(chunks, pair_dim(dim, x.ndim))]


@rule("unbind")
def unbind(out, x, dim=0):
    return [Pair(p) for p in x.t.unbind(pair_dim(dim, x.ndim))]


@rule("cat", "concat")
def cat(out, tensors, dim=0):
    dtype = parts_dtype(out)
    # torch's legacy rule: a 1-d empty tensor joins a cat of any rank (and adds nothing)
    kept = [v for v in tensors if out.dim() == 1 or tuple(v.shape) != (0,)]
    return Pair(torch.cat([as_pair(v, dtype).t for v in kept], pair_dim(dim, out.dim())))


@rule("stack")
def stack(out, tensors, dim=0):
    dtype = parts_dtype(out)
    return Pair(torch.stack([as_pair(v, dtype).t for v in tensors], pair_dim(dim, out.dim())))


@rule("copy")
def copy(out, x, src, non_blocking=False):
    """`x.copy_(src)`'s new value: src in x's dtype (its real part for a real x), broadcast."""
    if not out.dtype.is_complex:
        return src.re.to(out.dtype).expand(tuple(out.shape)).clone()
    return Pair(as_pair(src, real_dtype(out.dtype)).t.expand([*out.shape, 2]).clone())


@rule("clone", "lift_fresh_copy", "contiguous")
def clone(out, x, *args, **kwargs):
    """A new tensor: an in-place op on it must not reach the tensor it was copied from."""
    return Pair(x.t.clone())


@rule("alias", "detach", "resolve_conj", "resolve_neg")
def identity(out, x, *args, **kwargs):
    return x


# ---- creation ------------------------------------------------------------------------------

def _filled(out, value) -> Pair | torch.Tensor:
    """A new tensor of export's sizes holding `value`; a real one when the op's result is real
    (zeros_like(z, dtype=torch.float64))."""
    v = complex(value)
    if not out.dtype.is_complex:
        return torch.full(tuple(out.shape), v.real, dtype=out.dtype)
    dtype = real_dtype(out.dtype)
    return make(torch.full(tuple(out.shape), v.real, dtype=dtype),
                torch.full(tuple(out.shape), v.imag, dtype=dtype))


@rule("full", "new_full")
def full(out, *args, **kwargs):
    value = kwargs.get("fill_value", args[-1] if args else 0)
    return _filled(out, value)


@rule("full_like")
def full_like(out, x, fill_value, **kwargs):
    return _filled(out, fill_value)


@rule("zeros", "new_zeros", "zeros_like", "empty", "new_empty", "empty_like", "empty_strided")
def zeros(out, *args, **kwargs):
    return _filled(out, 0)


@rule("ones", "new_ones", "ones_like")
def ones(out, *args, **kwargs):
    return _filled(out, 1)


@rule("scalar_tensor")
def scalar_tensor(out, value, **kwargs):
    return _filled(out, value)
