"""User inputs that the program updates in place: the run writes their new value into the
memory it was given, and here it reaches the caller's own tensor or array."""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from .tensors import is_torch_tensor


def check_writable(leaf, what: str) -> None:
    """The caller's value can receive the update (before anything runs)."""
    if isinstance(leaf, np.ndarray) and not leaf.flags.writeable:
        raise InputError(f"{what}: the model updates this input in place, but the array is "
                         "read-only")
    if not (isinstance(leaf, np.ndarray) or is_torch_tensor(leaf)):
        raise InputError(f"{what}: the model updates this input in place; pass a numpy array "
                         f"or a torch tensor, not a {type(leaf).__name__}")


def write_back(leaf, owner) -> None:
    """Where the run wrote into a contiguous copy of `leaf` (`owner`), copy it back."""
    if owner is leaf:
        return
    if is_torch_tensor(leaf):
        if owner.data_ptr() != leaf.data_ptr():
            leaf.copy_(owner)
    elif not np.shares_memory(owner, leaf):
        np.copyto(leaf, owner)
