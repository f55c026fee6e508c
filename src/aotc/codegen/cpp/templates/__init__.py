"""How each template is emitted, one file per template, registered here by its op class.

A template states what it computes (ir/); how it becomes C++ is one of two kinds:
  - a call into a shipped kernel (gemm, conv, attention, sort, scan): `@emits(Gemm)` gives
    the statements the run function runs (`template_call`), and `@emits_helpers(Gemm)` the
    functions that call needs before the run function (a GEMM's epilogue);
  - a generated kernel (regions, compress): `@emits_kernel(RegionWrite)` gives a static C++
    function, written by `(code, program, buf, kid, ctx) -> Kernel` like the loop nests.
A new template adds its file, registers its emitter and touches nothing else in codegen; a
template class with no emitter is a CompileError naming it.
"""
from __future__ import annotations

from collections.abc import Callable

from ....errors import CompileError
from ....ir.nodes import Buffer, Program, Template
from ..code import CodeBuffer
from ..context import EmitContext
from ..kernels import Kernel, describe

# (buffer, pointer_of(buffer name) -> C expression, workspace pointer or None) -> statements
Call = Callable[[Buffer, Callable[[str], str], str | None], list[str]]
# (code, program, buffer) -> None: functions emitted before the run function
Helper = Callable[[CodeBuffer, Program, Buffer], None]
# (code, program, buffer, kernel id, context) -> the static function it wrote
KernelEmitter = Callable[[CodeBuffer, Program, Buffer, int, EmitContext], Kernel]

CALLS: dict[type, Call] = {}
HELPERS: dict[type, Helper] = {}
KERNELS: dict[type, KernelEmitter] = {}


def emits(cls: type) -> Callable[[Call], Call]:
    def wrap(fn: Call) -> Call:
        CALLS[cls] = fn
        return fn
    return wrap


def emits_helpers(cls: type) -> Callable[[Helper], Helper]:
    def wrap(fn: Helper) -> Helper:
        HELPERS[cls] = fn
        return fn
    return wrap


def emits_kernel(cls: type) -> Callable[[KernelEmitter], KernelEmitter]:
    def wrap(fn: KernelEmitter) -> KernelEmitter:
        KERNELS[cls] = fn
        return fn
    return wrap


def _no_emitter(op: Template) -> CompileError:
    return CompileError(f"no C++ emitter for template {type(op).__name__}")


def emit_template(code: CodeBuffer, program: Program, buf: Buffer, kid: int,
                  ctx: EmitContext) -> Kernel | None:
    """What a template buffer needs before the run function: its generated kernel (returned),
    or the helpers of its call (None: the call itself is in the run, `template_call`)."""
    assert isinstance(buf.op, Template)
    kernel = KERNELS.get(type(buf.op))
    if kernel is not None:
        return kernel(code, program, buf, kid, ctx)
    if type(buf.op) not in CALLS:
        raise _no_emitter(buf.op)
    helper = HELPERS.get(type(buf.op))
    if helper is not None:
        helper(code, program, buf)
    return None


def template_call(buf: Buffer, pointer_of: Callable[[str], str],
                  workspace: str | None = None) -> list[str]:
    """The statements that run a template buffer's kernel (its header comment first)."""
    assert isinstance(buf.op, Template)
    call = CALLS.get(type(buf.op))
    if call is None:
        raise _no_emitter(buf.op)
    return describe(buf) + call(buf, pointer_of, workspace)


# each file registers its emitters on import
from . import attention, compress, conv, fft, gemm, linalg, qgemm, regions, scan, sort, wo_gemm  # noqa: E402, F401, I001
