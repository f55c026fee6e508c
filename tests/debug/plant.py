"""Runs aotc's command line (or a script) in this process with one lowering planted wrong:
`python plant.py relu-as-abs|tanh-fails -- aotc-args...` or `... --script repro.py`."""
from __future__ import annotations

import runpy
import sys

import torch

from aotc.errors import CompileError
from aotc.lowering.registry import LOWERINGS, Rule

aten = torch.ops.aten


def _refuse(ctx, *args, **kwargs):
    raise CompileError(f"planted compile error lowering {ctx.target}")


def plant(kind: str) -> None:
    if kind == "relu-as-abs":  # a wrong value: relu computes |x|
        LOWERINGS[aten.relu.default] = LOWERINGS[aten.abs.default]
    elif kind == "tanh-fails":  # a compile error in one lowering
        LOWERINGS[aten.tanh.default] = Rule(_refuse, "pointwise")
    else:
        raise SystemExit(f"unknown fault {kind}")


if __name__ == "__main__":
    plant(sys.argv[1])
    if sys.argv[2] == "--script":
        sys.argv = sys.argv[3:]
        runpy.run_path(sys.argv[0], run_name="__main__")
    else:
        from aotc.cli import main

        sys.exit(main(sys.argv[3:]))
