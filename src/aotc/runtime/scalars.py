"""Symbolic values at the runtime's edges: a Python int passed for an int input (the
library takes it as a 0-dim int64 tensor) and a SymInt/SymFloat/SymBool output (a 0-dim
result returned as a Python number, as ep.module() returns it)."""
from __future__ import annotations

import numpy as np

from ..errors import InputError

_TYPES = {"int": int, "float": float, "bool": bool}


def int_input(value, what: str) -> np.ndarray:
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
        value = value.item()  # a 0-dim integer array stands for its value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{what}: expected an int, got {type(value).__name__}")
    return np.array(int(value), dtype=np.int64)


def as_number(value, kind: str | None):
    """`value` (a 0-dim tensor or array) as the Python number `kind` names; else itself."""
    if kind is None:
        return value
    return _TYPES[kind](value.item())
