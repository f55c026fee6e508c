"""Calls into the shipped template kernels: one emitter per Template class.

A template states what it computes (ir/nodes.py); how it is called lives here. The run
function asks `template_call` for each template buffer's statements, so a new template
registers its emitter and touches nothing else in codegen.
"""
from __future__ import annotations

from collections.abc import Callable

import sympy

from ...dtypes import DType
from ...errors import CompileError
from ...ir.nodes import ArgSort, Attention, Buffer, Conv, Gemm, Program, Scan, SearchSorted, Template
from . import ops
from .code import CodeBuffer
from .epilogue import emit_epilogue, epilogue_setup
from .exprs import c_index
from .kernels import describe

# (buffer, pointer_of(buffer name) -> C expression, workspace pointer or None) -> statements
Emitter = Callable[[Buffer, Callable[[str], str], str | None], list[str]]
EMITTERS: dict[type, Emitter] = {}


def emits(cls: type) -> Callable[[Emitter], Emitter]:
    def wrap(fn: Emitter) -> Emitter:
        EMITTERS[cls] = fn
        return fn
    return wrap


def template_call(buf: Buffer, pointer_of: Callable[[str], str],
                  workspace: str | None = None) -> list[str]:
    """The statements that run a template buffer's kernel (its header comment first)."""
    assert isinstance(buf.op, Template)
    emit = EMITTERS.get(type(buf.op))
    if emit is None:
        raise CompileError(f"no C++ emitter for template {type(buf.op).__name__}")
    return describe(buf) + emit(buf, pointer_of, workspace)


def _gemm_operands(buf: Buffer, pointer_of) -> dict[str, str]:
    """The C spellings of a GEMM's operands, sizes and scalars, as every entry point takes
    them: a, b and bias as `pointer + offset, strides...`."""
    op = buf.op
    assert isinstance(op, Gemm)

    def arg(o):
        return f"{pointer_of(o.buffer)} + {c_index(o.offset)}, " + ", ".join(
            c_index(s) for s in o.strides)

    return {
        "batch": c_index(op.batch), "m": c_index(op.m), "n": c_index(op.n), "k": c_index(op.k),
        "a": arg(op.a), "b": arg(op.b), "b_packed": pointer_of(op.b.buffer),
        "bias": arg(op.bias) if op.bias is not None else "nullptr, 0, 0, 0",
        "c": f"{pointer_of(buf.name)}, {c_index(sympy.expand(op.m * op.n))}, {c_index(op.n)}",
        "scalars": f"{ops.literal(op.alpha, DType.float32)}, {ops.literal(op.beta, DType.float32)}",
    }


@emits(Gemm)
def gemm_call(buf: Buffer, pointer_of, workspace: str | None) -> list[str]:
    """The call into the shipped GEMM: with a prepacked B, with a fused epilogue, or plain."""
    op = buf.op
    assert isinstance(op, Gemm)
    if buf.dtype is not DType.float32:
        raise CompileError("only float32 GEMM")
    g = _gemm_operands(buf, pointer_of)
    sizes = f"{g['batch']}, {g['m']}, {g['n']}, {g['k']},"
    if not op.b_packed and op.epilogue is None:
        return [f"aotc_sgemm_batched({sizes}", f"                   {g['a']},",
                f"                   {g['b']},", f"                   {g['c']},",
                f"                   {g['bias']}, {g['scalars']});"]
    setup, epilogue = epilogue_setup(buf, pointer_of)
    # a prepacked B is a constant in the kernel's panel layout, shared by the batch
    name, b = ("aotc_sgemm_prepacked", g["b_packed"]) if op.b_packed else ("aotc_sgemm_fused", g["b"])
    if op.b_bf16:  # the same call with B in the bfloat16 layout (scheduler/precision.py)
        name, b = "aotc_sgemm_prepacked_bf16", f"reinterpret_cast<const uint16_t *>({b})"
    pad = " " * (len(name) + 1)
    call = [f"{name}({sizes}", f"{pad}{g['a']},", f"{pad}{b},", f"{pad}{g['c']},",
            f"{pad}{g['bias']}, {g['scalars']}, {epilogue});"]
    if not setup:
        return call
    return ["{"] + ["  " + s for s in setup + call] + ["}"]


# (code, program, buffer) -> None: functions a template's call needs, emitted before the
# run function (a GEMM's epilogue)
Helper = Callable[[CodeBuffer, Program, Buffer], None]
HELPERS: dict[type, Helper] = {}


def emit_template_helpers(code: CodeBuffer, program: Program, buf: Buffer) -> None:
    helper = HELPERS.get(type(buf.op))
    if helper is not None:
        helper(code, program, buf)


def _gemm_helpers(code: CodeBuffer, program: Program, buf: Buffer) -> None:
    if isinstance(buf.op, Gemm) and buf.op.epilogue is not None:
        emit_epilogue(code, program, buf)


HELPERS[Gemm] = _gemm_helpers


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
    fields += ["1" if clamped else "0", lo if clamped else "0.0f", hi if clamped else "0.0f"]
    fields.append(pointer_of(op.residual) if op.residual else "nullptr")
    if op.weight_packed:
        fields.append("1")
    bias = pointer_of(op.bias) if op.bias else "nullptr"
    ws = f"reinterpret_cast<float *>({workspace})" if workspace else "nullptr"
    return [
        "{",
        f"  const aotc_conv_shape shape = {{{', '.join(fields)}}};",
        f"  aotc_sconv(&shape, {pointer_of(op.x)}, {pointer_of(op.weight)}, {bias}, "
        f"{pointer_of(buf.name)}, {ws});",
        "}",
    ]


@emits(Scan)
def scan_call(buf: Buffer, pointer_of, workspace: str | None) -> list[str]:
    """The call into the shipped scans (overloaded by element type in aotc_kernels.h)."""
    op = buf.op
    assert isinstance(op, Scan)
    fn = "aotc::scan_positions" if op.positions else "aotc::scan"
    return [f"{fn}(AOTC_SCAN_{op.op.name}, {c_index(op.outer)}, {c_index(op.length)}, "
            f"{c_index(op.inner)}, {pointer_of(op.x)}, {pointer_of(buf.name)});"]


SORT_SUFFIX = {DType.float32: "f32", DType.float64: "f64", DType.int64: "i64",
               DType.int32: "i32", DType.int16: "i16", DType.int8: "i8", DType.uint8: "u8",
               DType.bool: "b8"}


def _sort_suffix(dtype: DType) -> str:
    if dtype not in SORT_SUFFIX:
        raise CompileError(f"no sort kernel for {dtype.name}")
    return SORT_SUFFIX[dtype]


@emits(ArgSort)
def argsort_call(buf: Buffer, pointer_of, workspace: str | None) -> list[str]:
    op = buf.op
    assert isinstance(op, ArgSort)
    args = ", ".join(c_index(e) for e in (op.outer, op.length, op.inner, op.first, op.count))
    return [f"aotc_argsort_{_sort_suffix(op.dtype)}(AOTC_SORT_{op.algorithm.name}, {args}, "
            f"{int(op.descending)}, {pointer_of(op.x)}, {pointer_of(buf.name)});"]


@emits(SearchSorted)
def searchsorted_call(buf: Buffer, pointer_of, workspace: str | None) -> list[str]:
    op = buf.op
    assert isinstance(op, SearchSorted)
    args = ", ".join(c_index(e) for e in (op.lines, op.n, op.rows, op.per_row))
    return [f"aotc_searchsorted_{_sort_suffix(op.dtype)}({args}, {int(op.right)}, "
            f"{pointer_of(op.sorted)}, {pointer_of(op.values)}, {pointer_of(buf.name)});"]


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
