"""Opt-in input layout checks (AOTI_RUNTIME_CHECK_INPUTS=1 or AOTC_RUNTIME_CHECK_INPUTS=1):
an input whose strides differ from the export's raises InputError naming the input, the
dim and both strides. Rank, dtype and sizes are always checked by the compiled code."""
from __future__ import annotations

import os
import re

import numpy as np

from ..errors import InputError
from .tensors import is_torch_tensor

ENV_VARS = ("AOTI_RUNTIME_CHECK_INPUTS", "AOTC_RUNTIME_CHECK_INPUTS")
_SYMBOL = re.compile(r"[A-Za-z_]\w*")


def checks_enabled(environ=None) -> bool:
    env = os.environ if environ is None else environ
    return any(env.get(v, "").strip() not in ("", "0") for v in ENV_VARS)


def _contiguous(shape) -> list[int]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(int(s), 1)
    return strides[::-1]


class LayoutCheck:
    """The expected strides of each tensor input, as functions of the bound shape symbols."""

    def __init__(self, inputs: list[dict]):
        self.inputs = [(i["name"], i["sizes"], i.get("strides")) for i in inputs]
        # exports with contiguous inputs (the usual case) need only a contiguity test a call
        self._contiguous = [self._is_contiguous(sizes, strides) for _, sizes, strides in self.inputs]

    @property
    def contiguous_only(self) -> bool:
        """Whether every input was exported contiguous: then a contiguous input passes."""
        return all(self._contiguous)

    def _is_contiguous(self, sizes: list, strides: list | None) -> bool:
        if strides is None:
            return True
        for trial in (7, 13):  # two bindings of every symbol: an equality of polynomials
            symbols = {s: trial for s in set(_SYMBOL.findall(" ".join(map(str, sizes + strides))))}
            try:
                shape = [self._value(s, symbols) for s in sizes]
                if [self._value(s, symbols) for s in strides] != _contiguous(shape):
                    return False
            except Exception:  # an expression this runtime cannot evaluate: check in full
                return False
        return True

    @staticmethod
    def _value(expr, symbols: dict[str, int]) -> int | None:
        if isinstance(expr, int):
            return expr
        names = set(_SYMBOL.findall(expr))
        if not names <= set(symbols):
            return None
        # the schema allows only arithmetic over declared symbols in these strings
        return int(eval(expr, {"__builtins__": {}}, dict(symbols)))  # noqa: S307

    def check(self, leaves: list) -> None:
        """Raise InputError for the first tensor whose strides differ from the export's."""
        for leaf, (name, sizes, strides), contiguous in zip(leaves, self.inputs, self._contiguous):
            if contiguous and (leaf.flags.c_contiguous if isinstance(leaf, np.ndarray) else
                               is_torch_tensor(leaf) and leaf.is_contiguous()):
                continue
            if is_torch_tensor(leaf):
                shape, actual = tuple(leaf.shape), tuple(leaf.stride())
            elif isinstance(leaf, np.ndarray):
                shape = leaf.shape
                actual = tuple(s // leaf.itemsize for s in leaf.strides) if leaf.itemsize else ()
            else:
                continue  # a DLPack producer or scalar: sizes and dtype are checked later
            if len(shape) != len(sizes) or 0 in shape:
                continue  # the compiled code reports the rank; an empty tensor has no layout
            symbols = {s: int(shape[d]) for d, s in enumerate(sizes) if isinstance(s, str)
                       and _SYMBOL.fullmatch(s)}
            expected = ([self._value(s, symbols) for s in strides] if strides is not None
                        else _contiguous(shape))
            for d, (got, want) in enumerate(zip(actual, expected)):
                if want is None or shape[d] == 1 or got == want:
                    continue  # a size-1 dim's stride does not matter
                raise InputError(
                    f"input '{name}': stride {got} in dim {d} differs from the exported "
                    f"layout's {want} (strides {list(actual)}, expected {expected} for sizes "
                    f"{list(shape)}); pass a contiguous tensor (x.contiguous()), or unset "
                    f"{' and '.join(ENV_VARS)} to let aotc copy it")
