"""Per-node decomposition for ops with no lowering.

Only the one node is traced (with make_fx over its fake inputs), never the whole graph:
`ExportedProgram.run_decompositions()` re-traces everything at ~5 ms a node. The traced
subgraph's nodes are then lowered like any other (recursively decomposing again).
Symbolic int arguments (`x.repeat(z.size(0) + n, 1)`, a size mixing an input's shape
symbol and a `.item()` value) are placeholders of the trace too: make_fx records only
the symbolic values it can trace back to one of its inputs.
"""
from __future__ import annotations

import torch
from torch._decomp import decomposition_table
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils import _pytree as pytree

from .quantized import quantized_decomposition


def find_decompositions(op) -> list:
    """torch's decomposition table entry, aotc's own (OWN, below), the Python kernel of a
    quantized_decomposed op (quantized.py), then the op's own CompositeImplicitAutograd
    kernel: some table entries (Python references) reject arguments that the aten op
    accepts, such as margin_ranking_loss's integer reduction, where the composite kernel
    traces. torch.fft's functions take their composite kernel first: it passes the norm mode
    to aten._fft_* as a code the kernel applies, where the references multiply by 1/n as a
    Python float, fixed at the example's sizes when the length is dynamic."""
    own = OWN.get(op.name()) if isinstance(op, torch._ops.OpOverload) else None
    found = [fn for fn in (decomposition_table.get(op), own, quantized_decomposition(op))
             if fn is not None]
    if isinstance(op, torch._ops.OpOverload) and torch._C._dispatch_has_kernel_for_dispatch_key(
            op.name(), "CompositeImplicitAutograd"):
        found.insert(0, op.decompose) if op.name().startswith("aten::fft_") else \
            found.append(op.decompose)
    return found


def decompose_node(op, node: torch.fx.Node) -> torch.fx.GraphModule | None:
    """A graph computing `node` from its traced arguments (placeholders in argument order,
    traced_args below), by the first decomposition that traces; the first one's error if
    none does."""
    first_error: Exception | None = None
    for fn in find_decompositions(op):
        try:
            return _trace(fn, node)
        except Exception as e:  # the next decomposition may trace
            first_error = first_error or e
    if first_error is not None:
        raise first_error
    return None


def _trace(fn, node: torch.fx.Node) -> torch.fx.GraphModule:
    # fx keeps node arguments in immutable lists; decompositions may assign into theirs
    flat, spec = pytree.tree_flatten((_plain(node.args), _plain(node.kwargs)))
    values = [a.meta.get("val") if isinstance(a, torch.fx.Node) else a for a in flat]
    tensor_pos = [k for k, v in enumerate(values) if _traced(v)]
    tensors = [values[k] for k in tensor_pos]

    def run(*ts):
        vals = list(values)
        for k, t in zip(tensor_pos, ts):
            vals[k] = t
        args, kwargs = pytree.tree_unflatten(vals, spec)
        return _tuples(fn(*args, **kwargs))

    fake_mode = next((t.fake_mode for t in tensors if isinstance(t, FakeTensor)), None)
    if fake_mode is None:  # no tensor argument (a creation op): its sizes' shape env
        envs = [t.node.shape_env for t in tensors]
        fake_mode = FakeTensorMode(shape_env=envs[0] if envs else None)
    with fake_mode:
        gm = make_fx(run, tracing_mode="real")(*tensors)
    return gm


def _plain(value):
    """`value` with fx's immutable lists and dicts copied into plain ones, recursively."""
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _tuples(value):
    """Named tuples made plain (aminmax's, native_batch_norm's): traced, their constructor
    would become a node of its own."""
    if isinstance(value, (tuple, list)):
        return type(value)(map(_tuples, value)) if type(value) in (tuple, list) \
            else tuple(map(_tuples, value))
    return value


def _traced(value) -> bool:
    """Whether an argument's value is a placeholder of the trace: a tensor, or a symbolic
    int or bool (a float .item() stays a 0-dim tensor in aotc, so SymFloats do not)."""
    return isinstance(value, (torch.Tensor, torch.SymInt, torch.SymBool)) and not (
        isinstance(value, (torch.SymInt, torch.SymBool)) and value.node.is_constant())


def traced_args(node: torch.fx.Node) -> list:
    """The arguments of `node` that the decomposed graph's placeholders stand for: fx
    nodes, or symbolic values written into the call itself."""
    flat, _ = pytree.tree_flatten((_plain(node.args), _plain(node.kwargs)))
    return [a for a in flat if _traced(a.meta.get("val") if isinstance(a, torch.fx.Node) else a)]


# ---- decompositions for ops torch gives none (keyed by the op's qualified name) ------------

def _linear_cross_entropy(input, linear_weight, target, linear_bias, weight, reduction,
                          ignore_index, label_smoothing, batch_chunk_size, acc_policy, acc_dtype,
                          allow_retain_graph=True, compute_input_grad=False,
                          compute_linear_weight_grad=False, compute_linear_bias_grad=False):
    """F.linear_cross_entropy's chunked op: the loss of the logits, computed in acc_dtype
    (the chunking only bounds eager's memory), and the gradient slots left empty as the op
    returns them outside training."""
    if compute_input_grad or compute_linear_weight_grad or compute_linear_bias_grad:
        raise NotImplementedError("linear_cross_entropy with gradients precomputed in the "
                                  "forward pass (export the model under torch.no_grad())")
    logits = torch.nn.functional.linear(
        input.to(acc_dtype), linear_weight.to(acc_dtype),
        None if linear_bias is None else linear_bias.to(acc_dtype))
    loss = torch.nn.functional.cross_entropy(
        logits, target, None if weight is None else weight.to(acc_dtype), reduction=reduction,
        ignore_index=ignore_index, label_smoothing=label_smoothing).to(input.dtype)
    if reduction == "none":
        return loss
    empty = input.new_empty
    return loss, empty((0, 0)), empty((0, 0)), empty((0,))


def _linear_cross_entropy_none(input, linear_weight, target, linear_bias, weight, ignore_index,
                               batch_chunk_size, acc_policy, acc_dtype):
    return _linear_cross_entropy(input, linear_weight, target, linear_bias, weight, "none",
                                 ignore_index, 0.0, batch_chunk_size, acc_policy, acc_dtype)


def _linalg_pinv(input, atol=None, rtol=None, hermitian=False):
    """linalg.pinv as eager computes it (LinearAlgebra.cpp): the reciprocals of the singular
    values (of |eigenvalues| for a hermitian input) above max(atol, rtol * the largest),
    rtol by default eps * max(m, n) unless atol is positive; tolerances in float64."""
    m, n = input.shape[-2:]
    if input.numel() == 0:
        return input.new_zeros(input.shape[:-2] + (n, m))
    wide = torch.float64
    atol = torch.zeros((), dtype=wide) if atol is None else atol.to(wide)
    if rtol is None:
        eps = torch.full((), torch.finfo(input.dtype).eps * max(m, n), dtype=wide)
        rtol = torch.where(atol > 0, torch.zeros((), dtype=wide), eps)
    rtol = rtol.to(wide)
    if hermitian:
        s, u = torch.linalg.eigh(input)
        magnitude = s.abs()
        tol = torch.maximum(atol.unsqueeze(-1), rtol.unsqueeze(-1) * magnitude.amax(-1, True))
        inverse = torch.where(magnitude > tol, s.reciprocal(), 0.0).to(input.dtype)
        return torch.matmul(u * inverse.unsqueeze(-2), u.mH)
    u, s, vh = torch.linalg.svd(input, full_matrices=False)
    tol = torch.maximum(atol.unsqueeze(-1), rtol.unsqueeze(-1) * s[..., :1])
    inverse = torch.where(s > tol, s.reciprocal(), 0.0).to(input.dtype)
    return torch.matmul(vh.mH * inverse.unsqueeze(-2), u.mH)


def _linalg_vander(x, N=None):  # noqa: N803 - the schema's name
    """linalg.vander of a complex x as eager computes it (1, then the running products
    x, x*x, ... of cumprod, one multiplication each), for a static N: aotc's cumprod scans
    real values only. Real x takes torch's own decomposition (this one refuses)."""
    x = x.reshape(1) if x.ndim == 0 else x  # eager takes a scalar as one value
    n = x.shape[-1] if N is None else N
    if not x.is_complex() or not isinstance(n, int):
        raise NotImplementedError("complex x and a static N only")
    power = torch.ones_like(x)
    columns = [power]
    for _ in range(1, n):
        power = power * x
        columns.append(power)
    return torch.stack(columns, -1)


OWN = {
    "aten::linalg_pinv.atol_rtol_tensor": _linalg_pinv,
    "aten::linalg_vander": _linalg_vander,
    "torch_nn::_linear_cross_entropy_batch_chunked": _linear_cross_entropy,
    "torch_nn::_linear_cross_entropy_batch_chunked_no_reduction": _linear_cross_entropy_none,
}
