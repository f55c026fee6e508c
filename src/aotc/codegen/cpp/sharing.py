"""Kernels whose code is the same up to the names of their buffers share one function, so
a model that repeats a layer (the blocks of a transformer) compiles each kernel once.

The key of a kernel is its body with every buffer name (its parameters, and the locals named
after the buffers it computes) replaced by a placeholder in order of first use, plus the
parameters' types in that order. A later kernel with the key of an earlier one is not
written; its call passes its own buffers to the earlier function, matched by placeholder.
Only names that are used as variables are replaced (never one that is called, qualified or
a member), so two bodies with one key differ by a renaming of bound variables alone.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .code import CodeBuffer
from .kernels import Kernel

_NAME = re.compile(r"(?<![\w.])(?<!::)(?<!->)[A-Za-z_]\w*(?![\w(<])")
_FIXED = ("const int64_t *sym", "int *oob")  # parameters every call passes the same way


@dataclass(frozen=True)
class _Shared:
    kernel: Kernel
    order: tuple[str, ...]  # its parameters' placeholders, in its signature's order


def _signature(line: str, name: str) -> list[tuple[str, str]] | None:
    """(type, name) of each buffer parameter of `static void name(...)`; None if unparsed."""
    head = f"static void {name}("
    if not line.startswith(head) or not line.endswith(") {"):
        return None
    params = []
    for p in line[len(head):-3].split(", "):
        if p in _FIXED:
            continue
        m = re.fullmatch(r"(.*[\s*])([A-Za-z_]\w*)", p)
        if m is None:
            return None
        params.append((m.group(1).strip(), m.group(2)))
    return params


class KernelSharing:
    """Decides, kernel by kernel as they are written, which ones reuse an earlier function."""

    def __init__(self):
        self._seen: dict[tuple, _Shared] = {}

    def share(self, code: CodeBuffer, start: int, kernel: Kernel, computes: list[str]) -> Kernel:
        """`code.lines[start:]` hold `kernel` (computing the buffers `computes`): kept as is,
        or replaced by a comment and the kernel to call instead."""
        lines = code.lines[start:]
        at = next((k for k, ln in enumerate(lines) if ln.startswith("static void ")), None)
        params = None if at is None else _signature(lines[at], kernel.name)
        if params is None or len(params) != len(kernel.args):
            return kernel
        names = {n for _, n in params}
        prefixes = tuple(c + "_" for c in computes)
        placeholder: dict[str, str] = {}

        def rename(m: re.Match) -> str:
            word = m.group(0)
            if word not in names and word not in computes and not word.startswith(prefixes):
                return word
            return placeholder.setdefault(word, f"@{len(placeholder)}")

        before = [ln for ln in lines[:at] if not ln.lstrip().startswith("//")]  # not comments
        body = "\n".join(before + [_NAME.sub(rename, ln) for ln in lines[at + 1:]])
        for _, n in params:  # parameters the body never reads still count, in order
            placeholder.setdefault(n, f"@{len(placeholder)}")
        types = tuple(sorted((placeholder[n], t) for t, n in params))
        key = (body, types, kernel.checks_bounds, lines[at].count("int *oob"))
        order = tuple(placeholder[n] for _, n in params)
        first = self._seen.get(key)
        if first is None:
            self._seen[key] = _Shared(kernel, order)
            return kernel
        del code.lines[start:]
        code.line(f"// {kernel.name}: the code of {first.kernel.name}")
        code.line()
        arg_of = dict(zip(order, kernel.args))
        return Kernel(first.kernel.name, [arg_of[p] for p in first.order], kernel.checks_bounds)
