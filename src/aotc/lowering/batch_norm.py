"""Batch norm: inference (running statistics, folded into a preceding convolution where it
can be) and training (batch statistics, with the running statistics updated in place as
eager does: the new values go to `ctx.writes`, or are returned by the functional forms)."""
from __future__ import annotations

import sympy
import torch

from ..dtypes import DType
from ..errors import CompileError
from ..ir.expr import Binary, BinaryOp, Unary, UnaryOp, cast, constant
from ..ir.nodes import ReduceType
from ..ir.symbols import index_var, numel
from .common import operand
from .context import LoweringContext, TensorValue
from .conv import fold_batch_norm
from .opmath import HALF, lower_in_float
from .reduction import lower_mean_keep, reduce
from .registry import register_lowering

aten = torch.ops.aten
FAMILY = "nn"


def normalize(ctx, x, mean, var, weight, bias, eps, read) -> TensorValue:
    """(x - mean) * rsqrt(var + eps) * weight + bias, elementwise over the output, where
    read(v) gives a statistic or parameter at the output index (they broadcast differently
    in layer and batch norm)."""
    d, out = ctx.out_dtype, ctx.out_sizes
    rstd = Unary(UnaryOp.RSQRT, Binary(BinaryOp.ADD, read(var), constant(eps, d), d), d)
    y = Binary(BinaryOp.MUL, Binary(BinaryOp.SUB, operand(x, d, out), read(mean), d), rstd, d)
    if weight is not None:
        y = Binary(BinaryOp.MUL, y, read(weight), d)
    if bias is not None:
        y = Binary(BinaryOp.ADD, y, read(bias), d)
    return ctx.pointwise(y, out)


def batch_norm_inference(ctx, x, weight, bias, mean, var, eps) -> TensorValue:
    """Inference batch norm: the statistics and parameters are per channel (dim 1). After a
    convolution with constant weights it folds into that convolution at compile time."""
    folded = fold_batch_norm(ctx, x, weight, bias, mean, var, eps)
    if folded is not None:
        return folded
    return normalize(ctx, x, mean, var, weight, bias, eps,
                     lambda v: cast(v.load((index_var(1),)), ctx.out_dtype))


def _empty_outputs(ctx: LoweringContext, positions) -> tuple[TensorValue, ...]:
    """The outputs eager leaves empty (saved statistics in inference, the reserve)."""
    return tuple(ctx.pointwise(constant(0, ctx.outputs[k][1]), ctx.outputs[k][0],
                               hint=f"unused{k}") for k in positions)


def _stat_dtype(x: TensorValue, *params) -> DType:
    """The dtype eager keeps the saved statistics in: the input's, or float32 when a half
    input comes with float32 parameters (eager's mixed type)."""
    mixed = x.dtype in HALF and any(p is not None and p.dtype is DType.float32 for p in params)
    return DType.float32 if mixed else x.dtype


def batch_norm_training(ctx: LoweringContext, x: TensorValue, weight, bias, running_mean,
                        running_var, momentum: float, eps: float):
    """Batch norm over the batch's own statistics (per channel, over every dim but 1):
    (y, mean, invstd, new running mean or None, new running var or None), in float32 for
    half inputs. As eager's CPU kernel: the saved statistics are rounded to their dtype
    first, then y = x * alpha + beta with alpha = invstd * weight, beta = bias - mean * alpha;
    invstd uses the biased variance, the running variance takes the unbiased one, each
    running statistic weighted by `momentum`."""
    if x.ndim < 2:
        raise CompileError(f"batch_norm of a {x.ndim}-dim input: it needs a batch and a "
                           "channel dim")
    d = DType.float32 if x.dtype in HALF else x.dtype
    stat = _stat_dtype(x, weight, bias, running_mean, running_var)
    dims = [k for k in range(x.ndim) if k != 1]
    mean = lower_mean_keep(ctx, x, dims, d)
    at_channel = tuple(index_var(0) if k == 1 else sympy.Integer(0) for k in range(x.ndim))

    def sq_dev(elem, src):
        dev = Binary(BinaryOp.SUB, cast(elem, d), mean.load([0 if k in dims else i
                                                             for k, i in enumerate(src)]), d)
        return Binary(BinaryOp.MUL, dev, dev, d)

    ssq = reduce(ctx, x, dims, True, ReduceType.SUM, d, sq_dev, hint=f"{ctx.node_name}_ssq")
    n = numel(tuple(x.sizes[k] for k in dims))
    channels = (x.sizes[1],)
    save_mean = ctx.pointwise(cast(mean.load(at_channel), stat), channels,
                              hint=f"{ctx.node_name}_mean")
    # eager's bfloat16 kernel keeps the sum of squares and the variance in bfloat16 (its
    # float16 one in float32): the same roundings give the same invstd
    kept = DType.bfloat16 if stat is DType.bfloat16 else d
    var_sum = cast(cast(ssq.load(at_channel), kept), d)
    var = cast(cast(Binary(BinaryOp.DIV, var_sum, operand(n, d, ()), d), kept), d)
    invstd = ctx.pointwise(cast(Binary(BinaryOp.DIV, constant(1, d), Unary(UnaryOp.SQRT, Binary(
        BinaryOp.ADD, var, constant(eps, d), d), d), d), stat), channels,
        hint=f"{ctx.node_name}_invstd")

    c = index_var(1)
    alpha = cast(invstd.load((c,)), d)
    if weight is not None:
        alpha = Binary(BinaryOp.MUL, alpha, cast(weight.load((c,)), d), d)
    shift = Binary(BinaryOp.SUB, constant(0, d) if bias is None else cast(bias.load((c,)), d),
                   Binary(BinaryOp.MUL, cast(save_mean.load((c,)), d), alpha, d), d)
    y = Binary(BinaryOp.ADD, Binary(BinaryOp.MUL, operand(x, d, ctx.out_sizes), alpha, d),
               shift, d)
    out = ctx.pointwise(cast(y, ctx.out_dtype), ctx.out_sizes)

    def blend(running, batch):
        if running is None:
            return None
        new = Binary(BinaryOp.ADD,
                     Binary(BinaryOp.MUL, constant(momentum, d), batch, d),
                     Binary(BinaryOp.MUL, constant(1 - momentum, d),
                            cast(running.load((index_var(0),)), d), d), d)
        return ctx.pointwise(cast(new, running.dtype), channels,
                             hint=f"{ctx.node_name}_running")

    unbiased = Binary(BinaryOp.DIV, var_sum, operand(n - 1, d, ()), d)
    return (out, save_mean, invstd, blend(running_mean, mean.load(at_channel)),
            blend(running_var, unbiased))


def _train_updating(ctx, x, weight, bias, running_mean, running_var, momentum, eps,
                    mean_position: int):
    """Training batch norm whose running statistics (arguments `mean_position` and the
    next) are updated in place: (y, mean, invstd)."""
    y, mean, invstd, new_mean, new_var = batch_norm_training(
        ctx, x, weight, bias, running_mean, running_var, momentum, eps)
    for k, new in enumerate((new_mean, new_var)):
        if new is not None:
            ctx.writes[mean_position + k] = new
    return y, mean, invstd


def _inference(ctx, x, weight, bias, running_mean, running_var, eps, saved: bool):
    """Inference batch norm for a rule that sees half values in their own type: computed
    in float32 (opmath.py); with `saved`, also the empty saved mean and invstd."""
    def rule(ctx, *args):
        y = batch_norm_inference(ctx, *args)
        return (y,) + _empty_outputs(ctx, (1, 2)) if saved else y

    args = (x, weight, bias, running_mean, running_var, eps)
    if any(isinstance(a, TensorValue) and a.dtype in HALF for a in args) \
            or ctx.out_dtype in HALF:
        return lower_in_float(rule, ctx, args, {})
    return rule(ctx, *args)


# The training rules see half values in their own type (in_storage_type) to round the
# saved statistics to eager's dtype; batch_norm_training computes in float32 itself.
@register_lowering(aten.batch_norm.default, family=FAMILY, in_storage_type=True)
def lower_batch_norm(ctx, x, weight, bias, running_mean, running_var, training, momentum, eps,
                     cudnn_enabled=True):
    if numel(x.sizes) == 0:  # eager returns an empty result and leaves the statistics alone
        return ctx.pointwise(constant(0, ctx.out_dtype), ctx.out_sizes)
    if training or running_mean is None or running_var is None:
        return _train_updating(ctx, x, weight, bias, running_mean, running_var, momentum, eps,
                               3)[0]
    return _inference(ctx, x, weight, bias, running_mean, running_var, eps, saved=False)


@register_lowering(aten._native_batch_norm_legit.default, family=FAMILY, in_storage_type=True)
def lower_native_batch_norm_legit(ctx, x, weight, bias, running_mean, running_var, training,
                                  momentum, eps):
    if training:
        return _train_updating(ctx, x, weight, bias, running_mean, running_var, momentum, eps, 3)
    return _inference(ctx, x, weight, bias, running_mean, running_var, eps, saved=True)


@register_lowering(aten._native_batch_norm_legit.no_stats, family=FAMILY, in_storage_type=True)
def lower_native_batch_norm_no_stats(ctx, x, weight, bias, training, momentum, eps):
    return batch_norm_training(ctx, x, weight, bias, None, None, momentum, eps)[:3]


@register_lowering(aten._native_batch_norm_legit_functional.default, family=FAMILY,
                   in_storage_type=True)
def lower_native_batch_norm_functional(ctx, x, weight, bias, running_mean, running_var,
                                       training, momentum, eps):
    """(y, mean, invstd, new running mean, new running var)."""
    if training:
        return batch_norm_training(ctx, x, weight, bias, running_mean, running_var, momentum,
                                   eps)
    return _inference(ctx, x, weight, bias, running_mean, running_var, eps, saved=True) \
        + (running_mean, running_var)


@register_lowering(aten._batch_norm_with_update.default, family=FAMILY, in_storage_type=True)
def lower_batch_norm_with_update(ctx, x, weight, bias, running_mean, running_var, momentum,
                                 eps):
    """(y, mean, invstd, reserve): the reserve is empty on the CPU."""
    out = _train_updating(ctx, x, weight, bias, running_mean, running_var, momentum, eps, 3)
    return out + _empty_outputs(ctx, (3,))


@register_lowering(aten._batch_norm_with_update_functional.default, family=FAMILY,
                   in_storage_type=True)
def lower_batch_norm_with_update_functional(ctx, x, weight, bias, running_mean, running_var,
                                            momentum, eps):
    y, mean, invstd, new_mean, new_var = batch_norm_training(
        ctx, x, weight, bias, running_mean, running_var, momentum, eps)
    return (y, mean, invstd) + _empty_outputs(ctx, (3,)) + (new_mean, new_var)


@register_lowering(aten._native_batch_norm_legit_no_training.default, family=FAMILY)
def lower_native_batch_norm_inference(ctx, x, weight, bias, running_mean, running_var, momentum,
                                      eps):
    y = batch_norm_inference(ctx, x, weight, bias, running_mean, running_var, eps)
    return (y,) + _empty_outputs(ctx, (1, 2))  # the saved mean/invstd are empty in inference
