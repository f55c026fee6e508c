"""Command line: `aotc compile`, `aotc info`, `aotc ops`."""
from __future__ import annotations

import argparse
import json
import sys


def _parse_option(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"options are KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def cmd_compile(args) -> int:
    import aotc

    path = aotc.compile_and_package(args.program, package_path=args.output,
                                    options=dict(args.option or []))
    print(path)
    return 0


def cmd_info(args) -> int:
    from aotc.package.format import PackageReader

    reader = PackageReader(args.package)
    try:
        for name in reader.models:
            meta = reader.metadata(name)
            print(f"model {name!r}: aotc {meta['aotc_version']}, torch {meta['torch_version']}, "
                  f"target {meta['target']['arch']} ({meta['target']['isa']})")
            for i in meta["inputs"]:
                print(f"  input  {i['name']}: {i.get('dtype', i['kind'])}{i.get('sizes', '')}")
            for o in meta["outputs"]:
                print(f"  output {o['name']}: {o['dtype']}{o['sizes']}")
            for sym, (lo, hi) in meta["symbols"].items():
                print(f"  symbol {sym} in [{lo}, {hi if hi is not None else 'inf'}]")
            total = sum(c["nbytes"] for c in meta["constants"])
            print(f"  {len(meta['constants'])} constants, {total} bytes")
    finally:
        reader.close()
    return 0


def cmd_ops(args) -> int:
    from aotc.lowering import covered_ops

    for op, family in covered_ops().items():
        print(f"{family:10s} {op}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="aotc", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("compile", help="compile a program saved with torch.export.save")
    p.add_argument("program")
    p.add_argument("-o", "--output", required=True, help="the .pt2 package to write")
    p.add_argument("--option", action="append", type=_parse_option, metavar="KEY=VALUE")
    p.set_defaults(fn=cmd_compile)
    p = sub.add_parser("info", help="describe the models of a package")
    p.add_argument("package")
    p.set_defaults(fn=cmd_info)
    p = sub.add_parser("ops", help="list the ATen ops aotc lowers")
    p.set_defaults(fn=cmd_ops)
    args = parser.parse_args(argv)
    from aotc.errors import AotcError

    try:
        return args.fn(args)
    except AotcError as e:
        print(f"aotc: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
