"""The call into the shipped attention (kernels/attention.cpp): its shape as a local
aotc_attention_shape; a failed allocation of its key and value blocks fails the run."""
from __future__ import annotations

import sympy

from ....dtypes import DType
from ....errors import CompileError
from ....ir.nodes import Attention, Buffer
from .. import ops
from ..exprs import c_index
from . import emits


@emits(Attention)
def attention_call(buf: Buffer, pointer_of, workspace: str | None) -> list[str]:
    """The call into the shipped attention: its shape as a local aotc_attention_shape."""
    op = buf.op
    assert isinstance(op, Attention)
    if buf.dtype is not DType.float32:
        raise CompileError("only float32 attention")

    def strides(o) -> str:
        return "{" + ", ".join(c_index(s) for s in o.strides) + "}" if o else "{0, 0, 0, 0}"

    def at(o) -> str:
        return f"{pointer_of(o.buffer)} + {c_index(o.offset)}"

    probs = {DType.float32: "F32", DType.float16: "F16", DType.bfloat16: "BF16"}[op.probs]
    sizes = [c_index(sympy.sympify(e)) for e in (op.batch, op.heads, op.group, op.q_len,
                                                 op.kv_len, op.head_dim, op.v_dim)]
    fields = sizes + [strides(o) for o in (op.q, op.k, op.v, op.mask)]
    fields += [f"AOTC_ATTENTION_MASK_{op.mask_kind.name}", str(int(op.fill_when)),
               str(int(op.causal)), str(int(op.empty_rows_nan)), f"AOTC_ATTENTION_PROBS_{probs}",
               ops.literal(op.scale, DType.float32), ops.literal(op.fill, DType.float32)]
    mask = at(op.mask) if op.mask is not None else "nullptr"
    return [
        "{",
        f"  const aotc_attention_shape shape = {{{', '.join(fields)}}};",
        f"  if (aotc_attention_f32(&shape, {at(op.q)}, {at(op.k)}, {at(op.v)}, {mask}, "
        f"{pointer_of(buf.name)}) != 0)",
        f'    return aotc::fail(AOTC_ERR_MEMORY, "attention {buf.name}: out of memory for its '
        'key and value blocks");',
        "}",
    ]
