"""The one exception hierarchy of aotc. Torch-free: the runtime raises these too.

`located` is the one place that ties a failure to the op being compiled: every per-op step
(importing and lowering a node, fusing, grouping and emitting a buffer) runs inside it, so
an unexpected exception leaves as an `InternalError` naming the op and the user's source
line (the original as `__cause__`), and an aotc error that does not say where it arose
gets that said.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


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


class InternalError(CompileError):
    """aotc failed unexpectedly while compiling an op: a defect of aotc rather than of the
    program. `op`, `where` (the user's source line) and `stage` say where; `__cause__`
    holds the original exception."""

    def __init__(self, op: str, where: str, stage: str, cause: BaseException):
        self.op, self.where, self.stage = op, where, stage
        msg = f"internal error while {stage}"
        if op:
            msg += f" {op}"
        if where:
            msg += f" (at {where})"
        super().__init__(f"{msg}: {type(cause).__name__}: {cause}")


@contextmanager
def located(op: str, where: str, stage: str) -> Iterator[None]:
    """Run one per-op step of the compiler (`stage`: "importing", "fusing", ...): an
    unexpected exception becomes an InternalError naming `op` and `where`; a CompileError
    that names no op gets them added to its message."""
    try:
        yield
    except BuildError:
        raise
    except CompileError as e:
        if getattr(e, "op", None) is None and op:
            e.op, e.where = op, where
            text = str(e.args[0]) if e.args else ""
            note = f"{op}" + (f" at {where}" if where and where not in text else "")
            e.args = (f"{text} (while {stage} {note})",) + tuple(e.args[1:])
        raise
    except AotcError:
        raise
    except Exception as e:
        raise InternalError(op, where, stage, e) from e


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


class StateLimitError(AotcError, RuntimeError):
    """Every state a loaded model may hold at once is in use (its `max_states`): free one,
    or load the model with more."""
