"""Shape symbols that no input dim holds by itself: an int input's value, a `.item()`
value or a mask's count of selected positions read from the inputs' data, and a symbol seen
only inside a size expression (`2*d`, `d + 1`), solved from that size at run time."""
from __future__ import annotations

import sympy

from ...ir.binding import late_symbols
from ...ir.compress import Count
from ...ir.expr import loads
from ...ir.nodes import Program
from ...ir.symbols import UNBOUNDED_BELOW, reduction_var
from .code import CodeBuffer
from .exprs import BodyEmitter, c_checked_condition, c_condition, c_index, divides_maybe_by_zero
from .kernels import index_exprs, program_symbol_index, symbols_in


def range_check(code: CodeBuffer, program: Program, s: sympy.Symbol, v: str, what: str,
                kind: str = "") -> None:
    """Fail the run with an input error when `v`, the value bound to `s`, is outside the
    range the program keeps for it (frontend/ranges.py; an unbounded end is not checked)."""
    _check_within(code, program.symbols[s], v, what, f"{kind}{s.name}")


def size_range_check(code: CodeBuffer, program: Program, size: sympy.Expr, v: str,
                     what: str) -> None:
    """Fail the run when `v`, an input dim of derived size `size` (2*d), is outside the range
    export recorded for that expression; ep.module() checks no other (none: no check)."""
    rng = size_range(program, size)
    if rng is not None:
        _check_within(code, rng, v, what, f"dim {size}")


def size_range(program: Program, size: sympy.Expr) -> tuple[int, int | None] | None:
    """The range export recorded for a derived size expression, None when it recorded none."""
    if size in program.size_ranges:
        return program.size_ranges[size]
    expanded = sympy.expand(size)
    return next((r for e, r in program.size_ranges.items() if sympy.expand(e) == expanded), None)


def _check_within(code: CodeBuffer, rng: tuple, v: str, what: str, name: str) -> None:
    lo, hi = rng
    cond = [f"{v} < {lo}" if lo > UNBOUNDED_BELOW else "", f"{v} > {hi}" if hi is not None else ""]
    cond = [c for c in cond if c]
    if not cond:
        return
    text = (f"[{lo}" if lo > UNBOUNDED_BELOW else "(-inf") + (f", {hi}]" if hi is not None else ", inf)")
    code.line(f"if ({' || '.join(cond)})")
    code.line(f'  return aotc::fail(AOTC_ERR_INPUT, "{what} is %lld, outside the allowed range '
              f'{text} ({name})", (long long){v});')


def bind_scalar_input(code: CodeBuffer, program: Program, k: int, name: str, buffer: str,
                      bound: dict) -> None:
    """Symbol <- the value of int input k (a 0-dim int64 tensor)."""
    s = program.scalar_inputs[buffer]
    idx = program_symbol_index(program, s)
    code.line(f"sym[{idx}] = *static_cast<const int64_t *>(in[{k}].data);")
    range_check(code, program, s, f"sym[{idx}]", f"input '{name}'")
    bound[s] = f"input '{name}'"


def solve_size_symbols(code: CodeBuffer, program: Program, bound: dict,
                       deferred: list[tuple[int, str, int, sympy.Expr]]) -> None:
    """Bind each symbol that appears, alone and linearly (a*s + b, integers a > 0 and b),
    in some input size: s = (size - b) / a, an input error where no integer s explains the
    size or it falls outside s's range."""
    for k, nm, d, size in deferred:
        free = [s for s in size.free_symbols if s in program.symbols and s not in bound]
        if len(free) != 1:
            continue
        s = free[0]
        expr = sympy.expand(size)
        a, b = expr.coeff(s, 1), expr.coeff(s, 0)
        if not (a.is_Integer and b.is_Integer and a > 0 and sympy.expand(expr - a * s - b) == 0):
            continue
        idx = program_symbol_index(program, s)
        v = f"in[{k}].sizes[{d}]"
        with code.block(""):
            code.line(f"const int64_t rest = {v} - {int(b)};")
            code.line(f"if (rest % {int(a)} != 0)")
            code.line(f'  return aotc::fail(AOTC_ERR_INPUT, "input \'{nm}\': dim {d} is %lld, '
                      f'which is {size} for no integer {s.name}", (long long){v});')
            code.line(f"sym[{idx}] = rest / {int(a)};")
            # the symbol sizes other buffers: one below 0 (d + 1 at size 0) has no meaning
            code.line(f"if (sym[{idx}] < 0)")
            code.line(f'  return aotc::fail(AOTC_ERR_INPUT, "input \'{nm}\': dim {d} is %lld, '
                      f'which is {size} for {s.name} = %lld, below 0", (long long){v}, '
                      f'(long long)sym[{idx}]);')
        bound[s] = f"input '{nm}' dim {d}"


def bind_item_symbols(code: CodeBuffer, program: Program, bound: dict) -> None:
    """Each `.item()` symbol: its value computed from the inputs' data, checked against
    the range export recorded."""
    if not program.item_symbols:
        return
    index = {s.buffer: k for k, s in enumerate(program.inputs)}
    sizes = {b: program.buffers[b].sizes for b in index}
    late = late_symbols(program)
    for s, body in program.item_symbols.items():
        if s in late:  # bound during the run (codegen/cpp/late.py)
            continue
        idx = program_symbol_index(program, s)
        def pointer_of(b: str) -> str:
            return f"static_cast<const {program.buffers[b].dtype.ctype} *>(in[{index[b]}].data)"

        mask = body.mask if isinstance(body, Count) else body
        with code.block(""):
            used = [*index_exprs(mask), *(d for ld in loads(mask) for d in sizes[ld.buffer])]
            if isinstance(body, Count):
                used += list(body.ranges)
            for t in symbols_in(program, *used):
                code.line(f"const int64_t {t.name} = sym[{program_symbol_index(program, t)}];")
            if isinstance(body, Count):  # how many positions a mask selects
                value = emit_count(code, program, body, sizes, pointer_of)
                what = f"the selected count {s.name}"
            else:
                for ld in {ld.buffer for ld in loads(body)}:
                    code.line(f"if (aotc::numel(in[{index[ld]}]) == 0)")
                    code.line(f'  return aotc::fail(AOTC_ERR_INPUT, "input '
                              f'\'{_input_name(program, ld)}\': .item() of an empty tensor");')
                emitter = BodyEmitter(sizes, pointer_of)
                value = emitter.value(body)
                code.lines_of(emitter.lines)
                what = f".item() value {s.name}"
            code.line(f"sym[{idx}] = {value};")
            range_check(code, program, s, f"sym[{idx}]", what)
        bound[s] = what


def emit_assertions(code: CodeBuffer, program: Program, checks, declare: bool) -> None:
    """Check each (condition, what it is, message when it fails, message when it divides
    by zero):
    export's recorded conditions and the ops' own conditions on the sizes, each an input
    error; `declare`: read the symbols from `sym` first (in bind_inputs, where they are not
    locals). A division in a condition whose divisor may be 0 is evaluated without trapping
    and fails the run with the last message when the divisor is 0 (eager's
    ZeroDivisionError)."""
    for condition, _, message, zero_message in checks:
        with code.block(""):
            if declare:
                for s in symbols_in(program, condition):
                    code.line(f"const int64_t {s.name} = sym[{program_symbol_index(program, s)}];")
            if divides_maybe_by_zero(condition):
                code.line("bool zero = false;")
                code.line(f"const bool holds = {c_checked_condition(condition, 'zero')};")
                code.line("if (zero)")
                code.line(f'  return aotc::fail(AOTC_ERR_INPUT, "{_c_text(zero_message)}");')
                test = "holds"
            else:
                test = c_condition(condition)
            code.line(f"if (!({test}))")
            code.line(f'  return aotc::fail(AOTC_ERR_INPUT, "{_c_text(message)}");')


def run_checks(program: Program) -> list[tuple]:
    """What emit_assertions checks: export's conditions, then the ops' conditions."""
    return ([(c, w, f"{w} does not hold for these inputs",
              f"{w} divides by zero for these inputs") for c, w in program.assertions]
            + [(c, m, m, m) for c, m in program.checks])


def _c_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")


def _input_name(program: Program, buffer: str) -> str:
    return next(s.name for s in program.inputs if s.buffer == buffer)


def emit_count(code: CodeBuffer, program: Program, count: Count, sizes: dict, pointer_of) -> str:
    """Statements counting the positions `count.mask` selects; returns the count's name."""
    rv = [reduction_var(k) for k in range(len(count.ranges))]
    code.line("int64_t selected = 0;")
    for v, n in zip(rv, count.ranges):
        code.line(f"for (int64_t {v} = 0; {v} < {c_index(n)}; ++{v}) {{")
        code.level += 1
    body = BodyEmitter(sizes, pointer_of)
    keep = body.value(count.mask)
    code.lines_of(body.lines)
    code.line(f"selected += {keep} ? 1 : 0;")
    for _ in rv:
        code.level -= 1
        code.line("}")
    return "selected"
