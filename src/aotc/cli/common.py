"""What the commands share: the rich console, KEY=VALUE options, input specs
(`x=8,10:float32`) and dim bindings (`batch=8`)."""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np


def console():
    """A rich console on the current stdout (wide enough that tables never wrap in logs)."""
    from rich.console import Console

    return Console(file=sys.stdout, width=None if sys.stdout.isatty() else 140)


def parse_option(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"options are KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def parse_spec(text: str) -> tuple[str, tuple[int, ...], str]:
    """'x=8,10' or 'x=8,10:float64' -> (name, shape, dtype)."""
    name, sep, rest = text.partition("=")
    shape_text, _, dtype = rest.partition(":")
    try:
        shape = tuple(int(s) for s in shape_text.split(",") if s.strip())
    except ValueError:
        shape = None
    if not sep or not name or shape is None:
        raise argparse.ArgumentTypeError(f"an input spec is NAME=D0,D1,...[:DTYPE], got {text!r}")
    return name, shape, dtype or "float32"


def parse_dim(text: str) -> tuple[str, int]:
    """'s0=8' or 'x:0=8' (input x's dim 0) -> (key, 8)."""
    name, sep, value = text.partition("=")
    if not sep or not name or not value.strip().isdigit():
        raise argparse.ArgumentTypeError(f"a dim binding is SYMBOL=INT or INPUT:DIM=INT, "
                                         f"got {text!r}")
    return name, int(value)


def random_array(shape, dtype: str, rng: np.random.Generator) -> np.ndarray:
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(0, 10, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def plain(*values) -> list:
    """Table cells shown as they are (a shape such as [batch, 10] is not rich markup)."""
    from rich.text import Text

    return [Text(str(v)) for v in values]
