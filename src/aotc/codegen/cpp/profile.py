"""The run timed step by step (ABI version 7, include/aotc/aotc_abi.h): each step of the run
reads the clock before and after itself while the library's profile switch is on, and
records its time, arithmetic and traffic in its slot (kernels/aotc_profile.h); the table
kProfileSteps names each step's kernel, the ATen nodes it computes and their source lines."""
from __future__ import annotations

import re

import sympy

from ...ir.nodes import Program, Template
from ...ir.queries import reads_of
from ...scheduler.grouping import RowGroup, Scheduled
from ...scheduler.memory import nbytes
from .code import CodeBuffer
from .describe import c_string
from .exprs import c_index

_SHIPPED_CALL = re.compile(r"\b(aotc_\w+)\(")


def emit_profile_slots(code: CodeBuffer, n_steps: int) -> None:
    """The switch and the counters, before the run that adds to them."""
    code.lines_of([
        "// the profile: off until aotc_profile_enable; a slot per step of the run",
        f"constexpr int64_t kNumProfileSteps = {n_steps};",
        "std::atomic<bool> g_profiling{false};",
        "aotc::ProfileSlot g_profile[kNumProfileSteps > 0 ? kNumProfileSteps : 1];",
        "",
    ])


def step_begin(step: int) -> str:
    return (f"const uint64_t aotc_t{step} = g_profiling.load(std::memory_order_relaxed) ? "
            "aotc::now_ns() : 0;")


def step_end(program: Program, item: Scheduled, step: int) -> str:
    flops, traffic = _costs(program, item)
    return (f"if (aotc_t{step}) g_profile[{step}].record(aotc_t{step}, double({c_index(flops)}), "
            f"double({c_index(traffic)}));")


def _costs(program: Program, item: Scheduled) -> tuple[sympy.Expr, sympy.Expr]:
    """(arithmetic, bytes) of one run of the step: the whole buffers it reads from outside
    itself and those it writes (a bound where it reads only part of one)."""
    members = item.members if isinstance(item, RowGroup) else [item]
    local = item.local if isinstance(item, RowGroup) else set()
    own = {m.name for m in members}
    reads = sorted({b for m in members for b in reads_of(m)} - own)
    written = [m for m in members if m.name not in local]
    traffic = sum((nbytes(program.buffers[b]) for b in reads), sympy.Integer(0)) \
        + sum((nbytes(m) for m in written), sympy.Integer(0))
    flops = sum((m.op.flops() for m in members if isinstance(m.op, Template)), sympy.Integer(0))
    return sympy.expand(flops), sympy.expand(traffic)


def step_entry(item: Scheduled, kernel: str | None, call: list[str]) -> tuple[str, str, str]:
    """(kernel, ops, source) of a step: its generated function's name, or the shipped kernel
    its call statements name first."""
    members = item.members if isinstance(item, RowGroup) else [item]
    if kernel is None:
        found = next((m for line in call for m in _SHIPPED_CALL.findall(line)), None)
        op = members[0].op
        kernel = found or type(op).__name__.lower()
    ops, sources = [], []
    for m in members:
        o = m.origin
        if o is None:
            ops.append(m.name)
            continue
        ops += [f"{n} ({t})" for n, t in zip(o.nodes, o.targets)]
        if o.source and o.source not in sources:
            sources.append(o.source)
    return kernel, ", ".join(dict.fromkeys(ops)), "; ".join(sources)


def emit_profile_table(code: CodeBuffer, entries: list[tuple[str, str, str]]) -> None:
    """kProfileSteps: what aotc_describe_profile returns."""
    code.line("// the run's steps in order: kernel, the ATen nodes, their source lines")
    code.line("const aotc_profile_step kProfileSteps[] = {")
    for kernel, ops, source in entries:
        code.line(f"  {{{c_string(kernel)}, {c_string(ops)}, {c_string(source)}}},")
    if not entries:
        code.line('  {"", "", ""},')
    code.line("};")
    code.line()
