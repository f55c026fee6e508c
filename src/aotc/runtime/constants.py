"""A model's constants at run time: one weights generation (the arrays kept alive and the
pointer table `aotc_create` reads) and the checks of a `load_constants` update, which builds
the next generation. Torch-free: torch tensors are read through their data pointers."""
from __future__ import annotations

import ctypes
from collections.abc import Callable

import numpy as np

from ..dtypes import DType
from ..errors import InputError
from .tensors import as_input, is_torch_tensor

ALIGN = 64


class WeightSet:
    """The constants of one generation, in the order of the package's constants table."""

    def __init__(self, owners: list, addresses: list[int | None]):
        self.owners = owners  # whatever keeps each constant's memory alive
        self.pointers = (ctypes.c_void_p * max(len(addresses), 1))(*addresses)
        self.count = len(addresses)

    @classmethod
    def from_package(cls, weights: np.ndarray, table: list[dict]) -> WeightSet:
        base = weights.ctypes.data if weights.size else 0
        # the reader checked that each constant lies inside weights.bin
        return cls([weights] * len(table),
                   [base + c["offset"] if c["nbytes"] else None for c in table])

    def updated(self, replacements: dict[int, tuple[object, int | None]]) -> WeightSet:
        owners, addresses = list(self.owners), list(self.pointers[:self.count])
        for k, (owner, address) in replacements.items():
            owners[k], addresses[k] = owner, address
        return WeightSet(owners, addresses)


def swappable_names(table: list[dict]) -> list[str]:
    """Every constant a user can name: the parameters, buffers and lifted constants (folded
    constants that freezing made are internal)."""
    return [c["name"] for c in table if not c["name"].startswith("_folded.")]


def ties(table: list[dict]) -> dict[int, list[int]]:
    """{constant: the other constants of its tie}: constants stored as one range of
    weights.bin (same offset, size and dtype) held one value at compile time (tied weights,
    a buffer registered twice), so an update of one name swaps the others with it."""
    groups: dict[tuple, list[int]] = {}
    for k, c in enumerate(table):
        if c["nbytes"] and "packing" not in c:
            groups.setdefault((c["offset"], c["nbytes"], c["dtype"]), []).append(k)
    return {k: [j for j in group if j != k] for group in groups.values() if len(group) > 1
            for k in group}


def _aligned(nbytes: int) -> tuple[np.ndarray, int]:
    raw = np.empty(nbytes + ALIGN, np.uint8)
    return raw, raw.ctypes.data + (-raw.ctypes.data) % ALIGN


# (constant index, address of the user's contiguous value, address of nbytes to write): the
# model library's aotc_pack_constant, which writes the bytes the model reads
Pack = Callable[[int, int, int], None]


def prepare_update(table: list[dict], constants: dict, check_full_update: bool,
                   user_managed: bool, pack: Pack) -> dict[int, tuple[object, int | None]]:
    """{table index: (owner, address)} for an update, after checking every name, dtype and
    shape; InputError names the constant and what was expected. A copy, and a weight stored
    prepacked for the GEMM (user_managed or not), is written by `pack`."""
    if not isinstance(constants, dict):
        raise InputError(f"load_constants expects a dict {{name: tensor}}, got "
                         f"{type(constants).__name__}")
    index = {c["name"]: k for k, c in enumerate(table)}
    names = swappable_names(table)
    unknown = sorted(n for n in constants if n not in names)
    if unknown:
        raise InputError(f"load_constants: the model has no constant(s) {unknown}; its constants "
                         f"are {names}")
    tied = ties(table)
    given = {index[n] for n in constants}
    if check_full_update:
        covered = given | {j for k in given for j in tied.get(k, ())}
        missing = [n for n in names if index[n] not in covered]
        if missing:
            raise InputError(f"load_constants: constants {missing} are missing; give every "
                             "constant, or pass check_full_update=False to update some")
    folded = {src: c["name"] for c in table for src in c.get("folded_from", ())}
    frozen = sorted(n for n in constants if n in folded)
    if frozen:
        raise InputError(f"load_constants: {frozen} were folded into constants at compile time "
                         "(freezing=True), so a new value would not reach the results; compile "
                         "with options={'freezing': False} to swap them")
    out = {}
    for name, value in constants.items():
        entry = table[index[name]]
        what = f"constant '{name}'"
        expected = DType.from_name(entry["dtype"])
        owner, ptr, shape, _, dtype = as_input(value, what, expected)
        if dtype is not expected:
            raise InputError(f"{what}: dtype {dtype.name}, expected {expected.name}")
        if tuple(shape) != tuple(entry["sizes"]):
            raise InputError(f"{what}: shape {list(shape)}, expected {entry['sizes']}")
        if not entry["nbytes"]:
            out[index[name]] = (None, None)
        elif user_managed and owner is not value and not (
                is_torch_tensor(value) and owner.data_ptr() == value.data_ptr()):
            raise InputError(f"{what}: user_managed=True needs a contiguous tensor (aotc "
                             "reads its memory in place); pass a contiguous one or "
                             "user_managed=False to copy it")
        elif user_managed and "packing" not in entry:
            out[index[name]] = (owner, ptr)
        else:
            owner_copy, address = _aligned(entry["nbytes"])
            try:
                pack(index[name], ptr, address)
            except InputError as e:  # a value its packed layout cannot hold
                raise InputError(f"load_constants: {what}: {e}") from None
            out[index[name]] = (owner_copy, address)
    for k in sorted(given):
        for j in tied.get(k, ()):
            if j not in given and j not in out:
                out[j] = out[k]
    return out
