"""Neural-network ops kept whole by torch.export: layer_norm, batch_norm (inference)."""
from __future__ import annotations

import torch

from ..errors import CompileError
from ..ir.expr import Binary, BinaryOp, Unary, UnaryOp, constant
from .common import operand
from .reduction import lower_mean_keep, variance
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "nn"


@register_lowering(aten.layer_norm.default, family=FAMILY)
def lower_layer_norm(ctx, x, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn=True):
    d = ctx.out_dtype
    dims = list(range(x.ndim - len(normalized_shape), x.ndim))
    mean = lower_mean_keep(ctx, x, dims, d)
    var = variance(ctx, x, dims, 0, True, d, mean)
    out = ctx.out_sizes
    rstd = Unary(UnaryOp.RSQRT, Binary(BinaryOp.ADD, operand(var, d, out), constant(eps, d), d), d)
    y = Binary(BinaryOp.MUL, Binary(BinaryOp.SUB, operand(x, d, out), operand(mean, d, out), d),
               rstd, d)
    if weight is not None:
        y = Binary(BinaryOp.MUL, y, operand(weight, d, out), d)
    if bias is not None:
        y = Binary(BinaryOp.ADD, y, operand(bias, d, out), d)
    return ctx.pointwise(y)


def _channel(ctx, v, out):
    """A per-channel (dim 1) vector read at the output index."""
    from ..ir.symbols import index_var

    return v.load((index_var(1),)) if v is not None and len(out) > 1 else None


def _batch_norm(ctx, x, weight, bias, mean, var, eps):
    d, out = ctx.out_dtype, ctx.out_sizes
    rstd = Unary(UnaryOp.RSQRT, Binary(BinaryOp.ADD, _channel(ctx, var, out), constant(eps, d), d), d)
    y = Binary(BinaryOp.MUL, Binary(BinaryOp.SUB, operand(x, d, out), _channel(ctx, mean, out), d),
               rstd, d)
    if weight is not None:
        y = Binary(BinaryOp.MUL, y, _channel(ctx, weight, out), d)
    if bias is not None:
        y = Binary(BinaryOp.ADD, y, _channel(ctx, bias, out), d)
    return ctx.pointwise(y, out)


@register_lowering(aten.batch_norm.default, family=FAMILY)
def lower_batch_norm(ctx, x, weight, bias, running_mean, running_var, training, momentum, eps,
                     cudnn_enabled=True):
    if training or running_mean is None or running_var is None:
        raise CompileError("batch_norm in training mode (batch statistics) is not supported; "
                           "export the model after model.eval()")
    return _batch_norm(ctx, x, weight, bias, running_mean, running_var, eps)


@register_lowering(aten._native_batch_norm_legit_no_training.default, family=FAMILY)
def lower_native_batch_norm_inference(ctx, x, weight, bias, running_mean, running_var, momentum,
                                      eps):
    y = _batch_norm(ctx, x, weight, bias, running_mean, running_var, eps)
    # the saved mean/invstd outputs are empty in inference mode
    empties = tuple(ctx.pointwise(constant(0, dtype), sizes, hint=f"unused{k}")
                    for k, (sizes, dtype) in enumerate(ctx.outputs[1:3], 1))
    return (y,) + empties
