"""The call into the shipped convolution (kernels/conv.cpp): its shape as a local
aotc_conv_shape, its workspace the im2col or col2im buffer."""
from __future__ import annotations

import sympy

from ....dtypes import DType
from ....errors import CompileError
from ....ir.nodes import Buffer, Conv
from .. import ops
from ..exprs import c_index
from . import emits


@emits(Conv)
def conv_call(buf: Buffer, pointer_of, workspace: str | None) -> list[str]:
    """The call into the shipped convolution: its shape as a local aotc_conv_shape."""
    op = buf.op
    assert isinstance(op, Conv)
    if buf.dtype is not DType.float32:
        raise CompileError("only float32 convolution")

    def dims(xs) -> str:
        vals = [c_index(sympy.sympify(x)) for x in xs] + ["0"] * (3 - len(xs))
        return "{" + ", ".join(vals) + "}"

    fields = [c_index(op.batch), c_index(op.in_channels), c_index(op.out_channels),
              str(op.groups), str(len(op.kernel))]
    fields += [dims(x) for x in (op.in_size, op.out_size, op.kernel, op.stride, op.padding,
                                 op.dilation)]
    fields.append("1" if op.transposed else "0")
    clamped = op.clamp_min is not None or op.clamp_max is not None
    lo = "-INFINITY" if op.clamp_min is None else ops.literal(op.clamp_min, DType.float32)
    hi = "INFINITY" if op.clamp_max is None else ops.literal(op.clamp_max, DType.float32)
    activation = "2" if op.hardswish else "1" if clamped else "0"  # aotc_conv_shape.clamped
    fields += [activation, lo if clamped else "0.0f", hi if clamped else "0.0f"]
    fields.append(pointer_of(op.residual) if op.residual else "nullptr")
    layout = [name for name, on in (("AOTC_CONV_X_LAST", op.x_channels_last),
                                    ("AOTC_CONV_Y_LAST", op.out_channels_last)) if on]
    if op.weight_packed or op.weight_winograd or layout:  # the GEMM's B, the Winograd transform
        fields.append("2" if op.weight_winograd else "1" if op.weight_packed else "0")
    if layout:  # channels-last activations (scheduler/layout.py)
        fields.append(" | ".join(layout))
    bias = pointer_of(op.bias) if op.bias else "nullptr"
    ws = f"reinterpret_cast<float *>({workspace})" if workspace else "nullptr"
    return [
        "{",
        f"  const aotc_conv_shape shape = {{{', '.join(fields)}}};",
        f"  aotc_sconv(&shape, {pointer_of(op.x)}, {pointer_of(op.weight)}, {bias}, "
        f"{pointer_of(buf.name)}, {ws});",
        "}",
    ]
