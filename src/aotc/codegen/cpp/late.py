"""The run function's part in symbols bound during the run (ir/binding.py): after the
kernel computing its value, a symbol is computed, range-checked and stored in `sym` (which
every later kernel reads); then the arena of the stage it starts is sized from it and the
pointers of the buffers living there are set (scheduler/memory.py gives each slot a stage).
"""
from __future__ import annotations

import sympy

from ...ir.binding import value_of
from ...ir.compress import Count
from ...ir.expr import loads
from ...ir.nodes import Program
from ...scheduler.memory import MemoryPlan
from .bind import emit_count, range_check
from .code import CodeBuffer
from .exprs import BodyEmitter, c_index
from .kernels import program_symbol_index


def slot_pointer(plan: MemoryPlan, slot: int) -> str:
    """The C++ address of an arena slot: stage 0 lives in `arena`, stage k in the model's
    k-th late arena."""
    stage = plan.stage[slot] if plan.stage else 0
    return f"arena + slot{slot}" if stage == 0 else f"m->late_arena[{stage - 1}] + slot{slot}"


def emit_symbol_locals(code: CodeBuffer, program: Program, late: set, order: list) -> None:
    """`const int64_t s = sym[k];` for each symbol; one bound during the run is a variable,
    assigned when it binds."""
    for k, s in enumerate(order):
        qual = "" if s in late else "const "
        code.line(f"{qual}int64_t {s.name} = sym[{k}];")
    if late:
        code.line(f"(void){', (void)'.join(s.name for s in order)};")


def emit_bind(code: CodeBuffer, program: Program, s: sympy.Symbol) -> None:
    """Compute symbol `s` from the buffers its value reads, check its range, store it."""
    body = program.item_symbols[s]
    sizes = {ld.buffer: program.buffers[ld.buffer].sizes for ld in loads(value_of(body))}
    idx = program_symbol_index(program, s)
    with code.block(""):
        if isinstance(body, Count):
            value = emit_count(code, program, body, sizes, lambda b: b)
            what = f"the selected count {s.name}"
        else:
            emitter = BodyEmitter(sizes, lambda b: b)
            value = emitter.value(body)
            code.lines_of(emitter.lines)
            what = f".item() value {s.name}"
        code.line(f"sym[{idx}] = {value};")
        range_check(code, program, s, f"sym[{idx}]", what)
        code.line(f"{s.name} = sym[{idx}];")


def emit_stage_start(code: CodeBuffer, program: Program, plan: MemoryPlan, stage: int) -> None:
    """Size the slots of `stage` (all known now), grow its arena, point its buffers there."""
    slots = [k for k, st in enumerate(plan.stage) if st == stage]
    if not slots:
        return
    code.line(f"// stage {stage}: slots sized by the symbols bound above")
    with code.block(""):
        code.line("int64_t bytes = 0;")
        for k in slots:
            code.line(f"slot{k} = bytes;")
            code.line(f"bytes += aotc::align64({c_index(plan.slots[k])});")
        j = stage - 1
        with code.block(f"if (bytes > m->late_arena_bytes[{j}])"):
            code.line(f"std::free(m->late_arena[{j}]);")
            code.line(f"m->late_arena[{j}] = static_cast<char *>(std::aligned_alloc(64, bytes));")
            code.line(f"m->late_arena_bytes[{j}] = m->late_arena[{j}] ? bytes : 0;")
            code.line(f"if (!m->late_arena[{j}])")
            code.line('  return aotc::fail(AOTC_ERR_MEMORY, "cannot allocate a %lld-byte arena", '
                      "(long long)bytes);")
    for name, slot in plan.slot_of.items():
        if slot in slots:
            t = program.buffers[name].dtype.ctype
            code.line(f"{name} = reinterpret_cast<{t} *>({slot_pointer(plan, slot)});")
