"""Lowering: ATen ops -> loop-level IR. Importing this package registers every rule."""
from . import (  # noqa: F401
    attention,
    batch_norm,
    bitwise,
    compress,
    conv,
    creation,
    embedding_bag,
    grid_sample,
    histogram,
    indexing,
    linalg,
    linalg_cholesky,
    linalg_lu,
    loss,
    nn,
    padding,
    pointwise,
    pooling,
    quantize,
    reduction,
    repeat_interleave,
    resample,
    scan,
    scatter,
    segment,
    sort,
    special,
    tensor_split,
    unique,
    views,
    windows,
)
from .context import LoweringContext, TensorValue, buffer_value
from .registry import LOWERINGS, covered_ops, lookup, register_lowering

__all__ = ["LoweringContext", "TensorValue", "buffer_value", "LOWERINGS", "covered_ops", "lookup",
           "register_lowering"]
