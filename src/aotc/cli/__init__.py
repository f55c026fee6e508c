"""Command line: `aotc compile | run | inspect | bench | minify | ops | prepare | serve` (info is
inspect's old name). Tables and progress bars come from rich (the `cli` extra)."""
from __future__ import annotations

import argparse
import sys

from .build import add_build_commands, ops_markdown
from .inspect import add_inspect_commands
from .minify import add_minify_command
from .run import add_run_commands
from .serve import add_serve_command

__all__ = ["main", "ops_markdown"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="aotc", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    add_build_commands(sub)
    add_inspect_commands(sub)
    add_run_commands(sub)
    add_minify_command(sub)
    add_serve_command(sub)
    args = parser.parse_args(argv)
    from aotc.errors import AotcError

    try:
        return args.fn(args)
    except AotcError as e:
        print(f"aotc: error: {e}", file=sys.stderr)
        return 1
