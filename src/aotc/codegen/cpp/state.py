"""Model state in the translation unit: which constants are registered buffers the program
updates (each model object owns a copy, made from the constant at aotc_create), and where
each updated buffer's storage is (the caller's input, or the model's state)."""
from __future__ import annotations

from ...ir.nodes import BufferKind, Program
from .code import CodeBuffer


def state_constants(program: Program) -> list[int]:
    """Indices (in the constants table) of the constants that are model state, in order."""
    return [k for k, c in enumerate(program.constants) if c.buffer in program.updates]


def state_index(program: Program) -> dict[str, int]:
    """Constant buffer -> its index among the model's state buffers."""
    return {program.constants[k].buffer: j for j, k in enumerate(state_constants(program))}


def storage_of(program: Program, source: str) -> str:
    """The C++ pointer (void *) to the memory that updated buffer `source` lives in."""
    buf = program.buffers[source]
    if buf.kind is BufferKind.INPUT:
        k = [s.buffer for s in program.inputs].index(source)
        return f"in[{k}].data"
    return f"m->state[{state_index(program)[source]}]"


def emit_state_tables(code: CodeBuffer, program: Program) -> None:
    state = state_constants(program)
    code.lines_of([
        "// model state: the constants (registered buffers) the program updates in place",
        f"constexpr int64_t kNumState = {len(state)};",
        f"constexpr int64_t kStateConstant[] = {{{', '.join(map(str, state)) or '0'}}};",
    ])
