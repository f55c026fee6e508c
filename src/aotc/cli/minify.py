"""`aotc minify PROGRAM -o repro.py`: shrink a program (a saved export or FILE.py:FACTORY)
that aotc fails on to a minimal failing subgraph and write a standalone repro script."""
from __future__ import annotations

import logging

import numpy as np

from .common import console, parse_option, parse_spec


def _example_inputs(ep, args) -> list:
    import torch

    from aotc.autotune import example_inputs

    if args.inputs:
        with np.load(args.inputs) as npz:
            return [torch.from_numpy(npz[k]) for k in npz.files]
    return example_inputs(ep, args.seed)


def cmd_minify(args) -> int:
    import torch

    from aotc.debug import minify

    from .build import export_from_factory

    if ".py:" in args.program:
        ep = export_from_factory(args.program, args.input or [], [])
    else:
        ep = torch.export.load(args.program)
    inputs = _example_inputs(ep, args)
    out = console()
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("  minify: %(message)s"))
    logger = logging.getLogger("aotc.minify")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if args.verbose else logging.WARNING)
    try:
        with out.status("minifying: each candidate subgraph is compiled and compared"):
            result = minify(ep, inputs, args.output, dict(args.option or []), args.rtol, args.atol)
    finally:
        logger.removeHandler(handler)
    out.print(f"{result.failure}", highlight=False)
    out.print(f"minimal failing subgraph: {len(result.nodes)} node(s) {result.nodes}, inputs "
              f"{[list(s) for s in result.input_shapes]} ({result.checks} candidates compiled)",
              highlight=False)
    out.print(f"repro: {result.repro} (python {result.repro} exits 1 while it fails)",
              highlight=False)
    return 0


def add_minify_command(sub) -> None:
    p = sub.add_parser("minify", help="shrink a failing program to a minimal repro script")
    p.add_argument("program", help="saved_program.pt2, or module.py:factory")
    p.add_argument("-o", "--output", required=True, help="the repro script to write")
    p.add_argument("--inputs", help="an .npz of the inputs, in order (default: the export's "
                   "example inputs, else random)")
    p.add_argument("--input", action="append", type=parse_spec, metavar="NAME=D0,D1[:DTYPE]",
                   help="example input shapes for module.py:factory")
    p.add_argument("--option", action="append", type=parse_option, metavar="KEY=VALUE")
    p.add_argument("--rtol", type=float, default=None)
    p.add_argument("--atol", type=float, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-v", "--verbose", action="store_true", help="log every candidate")
    p.set_defaults(fn=cmd_minify)
