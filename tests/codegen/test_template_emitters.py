"""The template emitter registry: every template class of the IR has exactly one emitter
(a call into a shipped kernel or a generated kernel), and one without is a CompileError."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
import sympy

from aotc.codegen.cpp.code import CodeBuffer
from aotc.codegen.cpp.context import EmitContext
from aotc.codegen.cpp.templates import CALLS, HELPERS, KERNELS, emit_template
from aotc.dtypes import DType
from aotc.errors import CompileError
from aotc.ir import compress, regions  # noqa: F401  (their templates join Template's subclasses)
from aotc.ir.nodes import Buffer, BufferKind, Program, Template
from aotc.target import target_for


def _template_classes() -> set[type]:
    found, todo = set(), [Template]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("aotc."):
                found.add(sub)
    return found


def test_every_template_class_has_one_emitter():
    classes = _template_classes()
    assert {"Gemm", "Conv", "RegionWrite", "Compress"} <= {c.__name__ for c in classes}
    for cls in classes:
        assert (cls in CALLS) != (cls in KERNELS), cls.__name__
    assert set(HELPERS) <= set(CALLS)  # helpers only serve a call


@dataclass(frozen=True)
class Unknown(Template):
    def reads(self) -> tuple[str, ...]:
        return ()

    def describe(self) -> str:
        return "unknown"


def test_a_template_class_without_emitter_is_named():
    p = Program()
    buf = p.add(Buffer("t", DType.float32, (sympy.Integer(4),), BufferKind.COMPUTED, Unknown()))
    ctx = EmitContext(target_for("avx2"), frozenset())
    with pytest.raises(CompileError, match="no C\\+\\+ emitter for template Unknown"):
        emit_template(CodeBuffer(), p, buf, 0, ctx)
