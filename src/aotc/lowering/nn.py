"""Neural-network ops kept whole by torch.export: layer, group and instance norm (batch
norm is in batch_norm.py)."""
from __future__ import annotations

import sympy
import torch

from ..ir.expr import Binary, BinaryOp, Unary, UnaryOp, cast, constant
from ..ir.symbols import FloorDiv, index_var, numel
from .batch_norm import batch_norm_inference, normalize
from .common import operand
from .context import TensorValue
from .reduction import lower_mean_keep, variance
from .registry import register_lowering
from .views import lower_view

aten = torch.ops.aten
FAMILY = "nn"


@register_lowering(aten.layer_norm.default, family=FAMILY)
def lower_layer_norm(ctx, x, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn=True):
    d = ctx.out_dtype
    dims = list(range(x.ndim - len(normalized_shape), x.ndim))
    mean = lower_mean_keep(ctx, x, dims, d)
    var = variance(ctx, x, dims, 0, True, d, mean)
    return normalize(ctx, x, mean, var, weight, bias, eps,
                     lambda v: operand(v, d, ctx.out_sizes))


@register_lowering(aten.native_layer_norm.default, family=FAMILY)
def lower_native_layer_norm(ctx, x, normalized_shape, weight, bias, eps):
    """(layer norm, mean, rstd), the statistics keeping the normalized dims as 1s."""
    d = ctx.out_dtype
    dims = list(range(x.ndim - len(normalized_shape), x.ndim))
    mean = lower_mean_keep(ctx, x, dims, d)
    var = variance(ctx, x, dims, 0, True, d, mean)
    y = normalize(ctx, x, mean, var, weight, bias, eps, lambda v: operand(v, d, ctx.out_sizes))
    rstd = Unary(UnaryOp.RSQRT, Binary(BinaryOp.ADD, operand(var, d, var.sizes),
                                       constant(eps, d), d), d)
    return y, mean, ctx.pointwise(rstd, var.sizes, hint=f"{ctx.node_name}_rstd")


def _group_stats(ctx, x: TensorValue, groups: int, d):
    """(mean, variance) of x [N, C, *] over each group of C/groups channels and all the
    spatial positions, as [N, groups, 1] (biased variance, as the norms use)."""
    n = x.sizes[0]
    rest = numel(x.sizes[1:]) / groups
    grouped = lower_view(ctx, x, [n, groups, rest])
    mean = lower_mean_keep(ctx, grouped, [2], d)
    return mean, variance(ctx, grouped, [2], 0, True, d, mean)


def group_norm(ctx, x: TensorValue, groups: int, weight, bias, eps) -> tuple:
    """y[n, c, ...] = (x - mean[n, c // (C/groups)]) * rstd * weight[c] + bias[c]; also
    (mean, rstd) as [N, groups] for native_group_norm."""
    d = ctx.out_dtype
    mean, var = _group_stats(ctx, x, groups, d)
    per_group = x.sizes[1] / groups
    i0, i1 = index_var(0), index_var(1)
    stat_index = (i0, FloorDiv(i1, per_group) if per_group != 1 else i1, 0)

    def read(v: TensorValue):
        if v is mean or v is var:
            return cast(v.load(stat_index), d)
        return cast(v.load((i1,)), d)

    y = normalize(ctx, x, mean, var, weight, bias, eps, read)
    n = x.sizes[0]
    rstd = ctx.pointwise(Unary(UnaryOp.RSQRT, Binary(BinaryOp.ADD, cast(var.load(
        (i0, i1, 0)), d), constant(eps, d), d), d), (n, groups), hint=f"{ctx.node_name}_rstd")
    return y, lower_view(ctx, mean, [n, groups]), rstd


@register_lowering(aten.group_norm.default, family=FAMILY)
def lower_group_norm(ctx, x, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return group_norm(ctx, x, num_groups, weight, bias, eps)[0]


@register_lowering(aten.native_group_norm.default, family=FAMILY)
def lower_native_group_norm(ctx, x, weight, bias, n, c, hw, group, eps):
    return group_norm(ctx, x, group, weight, bias, eps)


@register_lowering(aten.instance_norm.default, family=FAMILY)
def lower_instance_norm(ctx, x, weight, bias, running_mean, running_var, use_input_stats,
                        momentum, eps, cudnn_enabled=True):
    """Statistics per (instance, channel); with running statistics, a batch norm."""
    if (weight is not None or bias is not None) and x.ndim >= 2:
        # eager repeats the affine parameters per instance and indexes the result, which
        # raises when there is no (instance, channel) pair
        ctx.require(sympy.Ne(x.sizes[0] * x.sizes[1], 0, evaluate=False),
                    "select(): index 0 out of range for the affine parameters repeated over no "
                    "(instance, channel) pair (the batch or the channels are 0 for these inputs)")
    if use_input_stats:
        return group_norm(ctx, x, x.sizes[1], weight, bias, eps)[0]
    return batch_norm_inference(ctx, x, weight, bias, running_mean, running_var, eps)
