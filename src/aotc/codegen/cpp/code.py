"""A small buffer of C++ lines with indentation."""
from __future__ import annotations

from contextlib import contextmanager


class CodeBuffer:
    def __init__(self, indent: str = "  "):
        self.lines: list[str] = []
        self.level = 0
        self.unit = indent

    def line(self, text: str = "") -> None:
        self.lines.append(self.unit * self.level + text if text else "")

    def lines_of(self, texts) -> None:
        for t in texts:
            self.line(t)

    @contextmanager
    def indent(self):
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1

    @contextmanager
    def block(self, header: str, trailer: str = ""):
        """`header {` ... `}` (a bare scope when header is empty)."""
        self.line(f"{header} {{" if header else "{")
        with self.indent():
            yield
        self.line("}" + trailer)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
