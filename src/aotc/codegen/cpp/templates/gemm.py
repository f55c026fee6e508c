"""The GEMM: the call into the shipped kernel (with a prepacked B, a fused epilogue, or
plain) and its fused epilogue, a C++ function the kernel calls on each finished block of C
(aotc_gemm_epilogue in kernels/aotc_kernels.h), with the argument table it reads.

The epilogue rewrites the block in place: for output row `row + r` (counting the rows of
every matrix of the batch, which unravels into the leading index variables) and column
`col + j` (the last index variable), the product is `acc` and the element becomes the
epilogue body's value. Other buffers the body reads come through the table, after the
shape symbols."""
from __future__ import annotations

import sympy

from ....dtypes import DType
from ....errors import CompileError
from ....ir.nodes import Buffer, Gemm, Program
from ....ir.symbols import index_vars
from .. import ops
from ..code import CodeBuffer
from ..exprs import BodyEmitter, c_index
from ..kernels import describe, symbol_order
from . import emits, emits_helpers


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
    elif op.b_half:  # a half model's weight packed as float32 panels (scheduler/prepack.py)
        b = f"reinterpret_cast<const float *>({b})"
    pad = " " * (len(name) + 1)
    call = [f"{name}({sizes}", f"{pad}{g['a']},", f"{pad}{b},", f"{pad}{g['c']},",
            f"{pad}{g['bias']}, {g['scalars']}, {epilogue});"]
    if not setup:
        return call
    return ["{"] + ["  " + s for s in setup + call] + ["}"]


@emits_helpers(Gemm)
def gemm_helpers(code: CodeBuffer, program: Program, buf: Buffer) -> None:
    if isinstance(buf.op, Gemm) and buf.op.epilogue is not None:
        emit_epilogue(code, program, buf)


def epilogue_name(buf: Buffer) -> str:
    return f"epilogue_{buf.name}"


def unpack_table(code: CodeBuffer, program: Program, others: list[str], first: int = 1) -> None:
    """An epilogue's first statements: the shape symbols from its argument table's first
    entry, then the buffers `others` it reads from entries `first`, `first + 1`, ..."""
    code.line("const void *const *args = static_cast<const void *const *>(ctx);")
    code.line("const int64_t *sym = static_cast<const int64_t *>(args[0]);")
    for k, s in enumerate(symbol_order(program)):
        code.line(f"const int64_t {s.name} = sym[{k}];")
        code.line(f"(void){s.name};")
    code.line("(void)sym;")
    for k, name in enumerate(others, start=first):
        t = program.buffers[name].dtype.ctype
        code.line(f"const {t} *__restrict {name} = static_cast<const {t} *>(args[{k}]);")


def unravel_row(code: CodeBuffer, sizes, iv, row: str) -> None:
    """The leading index variables of output row `row` (all but the last), innermost first."""
    code.line(f"int64_t rest = {row};")
    for d in range(len(sizes) - 2, 0, -1):
        size = c_index(sizes[d])
        code.line(f"const int64_t {iv[d]} = rest % ({size});")
        code.line(f"rest /= {size};")
    if len(sizes) > 1:
        code.line(f"const int64_t {iv[0]} = rest;")
    code.line("(void)rest;")


def emit_epilogue(code: CodeBuffer, program: Program, buf: Buffer) -> None:
    op = buf.op
    assert isinstance(op, Gemm) and op.epilogue is not None
    others = op.epilogue_reads()
    iv = index_vars(len(buf.sizes))
    body = BodyEmitter({n: program.buffers[n].sizes for n in others}, lambda n: n,
                       {op.epilogue_source: "acc"})
    result = body.value(op.epilogue)
    code.lines_of(describe(buf))
    with code.block(f"void {epilogue_name(buf)}(const void *ctx, float *c, int64_t ldc, "
                    "int64_t row, int64_t col, int64_t rows, int64_t cols)"):
        unpack_table(code, program, others)
        with code.block("for (int64_t r = 0; r < rows; ++r)"):
            unravel_row(code, buf.sizes, iv, "row + r")
            code.line("float *__restrict out = c + r * ldc;")
            code.line("#pragma omp simd")
            with code.block("for (int64_t j = 0; j < cols; ++j)"):
                code.line(f"const int64_t {iv[-1]} = col + j;")
                code.line(f"(void){iv[-1]};")
                code.line("const float acc = out[j];")
                code.lines_of(body.lines)
                code.line(f"out[j] = static_cast<float>({result});")
    code.line()


def epilogue_setup(buf: Buffer, pointer_of) -> tuple[list[str], str]:
    """(statements that build the epilogue's argument table, the pointer to pass)."""
    op = buf.op
    assert isinstance(op, Gemm)
    if op.epilogue is None:
        return [], "nullptr"
    return epilogue_table(buf, pointer_of, op.epilogue_reads(), "aotc_gemm_epilogue")


def epilogue_table(buf: Buffer, pointer_of, entries: list[str],
                   struct: str) -> tuple[list[str], str]:
    """(statements that build an epilogue's argument table, symbols then `entries`, and its
    `struct` {function, table}; the pointer to pass)."""
    name = epilogue_name(buf)
    table = ", ".join(["sym"] + [pointer_of(n) for n in entries])
    return [f"const void *const {name}_args[] = {{{table}}};",
            f"const {struct} {name}_call = {{{name}, {name}_args}};"], f"&{name}_call"
