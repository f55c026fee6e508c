"""The one exception hierarchy of aotc. Torch-free: the runtime raises these too."""
from __future__ import annotations


class AotcError(Exception):
    """Base class of every error aotc raises on purpose."""


class UnsupportedOperatorError(AotcError):
    """An op of the exported graph has no lowering (and no decomposition that has one)."""

    def __init__(self, op: str, where: str = "", detail: str = ""):
        self.op = op
        self.where = where
        msg = f"aotc cannot compile operator {op}"
        if where:
            msg += f" (at {where})"
        if detail:
            msg += f": {detail}"
        else:
            msg += ": it has no lowering and no decomposition into supported ops"
        super().__init__(msg)


class CompileError(AotcError):
    """The program could not be compiled (a graph aotc cannot handle, a bad option)."""


class BuildError(CompileError):
    """The C++ compiler is missing or failed; `log_path` holds its full output."""

    def __init__(self, message: str, log_path: str | None = None):
        self.log_path = log_path
        if log_path:
            message += f"\n  full compiler log: {log_path}"
        super().__init__(message)


class PackageError(AotcError):
    """A .pt2 package is missing, corrupt, of another format version, or lacks a model."""


class InputError(AotcError, ValueError, RuntimeError):
    """Inputs given to a compiled model do not match what it was compiled for. A ValueError,
    and a RuntimeError as AOTInductor's input checks raise."""


class RuntimeFailure(AotcError, RuntimeError):
    """The compiled code reported a failure while running."""
