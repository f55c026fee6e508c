"""`aotc compile` (a saved export, or `module.py:factory` with example shapes and dynamic
dims from flags), `aotc prepare` and `aotc ops`."""
from __future__ import annotations

import argparse
import importlib.util
import inspect
import time
from pathlib import Path

from .common import parse_option, parse_spec


def parse_dynamic(text: str) -> tuple[str, int, str, int | None, int | None]:
    """'x:0=batch:1:1024' -> (input, dim, symbol, min, max)."""
    where, sep, rest = text.partition("=")
    name, _, dim = where.partition(":")
    parts = rest.split(":")
    try:
        bounds = [int(p) if p else None for p in parts[1:3]] + [None, None]
        if not sep or not name or not parts[0] or len(parts) > 3:
            raise ValueError
        return name, int(dim), parts[0], bounds[0], bounds[1]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a dynamic dim is INPUT:DIM=SYMBOL[:MIN:MAX], got {text!r}") from None


def load_factory(target: str):
    """'path/to/module.py:factory' -> the object factory() returns."""
    from aotc.errors import CompileError

    file, _, attr = target.rpartition(":")
    if not file.endswith(".py") or not Path(file).is_file():
        raise CompileError(f"{target!r}: expected FILE.py:FACTORY with an existing file")
    spec = importlib.util.spec_from_file_location(Path(file).stem, file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise CompileError(f"{file} has no callable {attr!r}")
    return factory()


def export_from_factory(target: str, specs: list, dynamic: list):
    """Export what `module.py:factory` builds: an nn.Module (example inputs from `specs`), or
    (module, example_args) from the factory itself."""
    import torch

    from aotc.errors import CompileError

    made = load_factory(target)
    module, args = (made if isinstance(made, tuple) else (made, None))
    if not isinstance(module, torch.nn.Module):
        raise CompileError(f"{target} returned a {type(module).__name__}; expected an nn.Module "
                           "or (module, example_args)")
    names = [p for p in inspect.signature(module.forward).parameters if p != "self"]
    if args is None:
        if not specs:
            raise CompileError(f"{target} returned a module without example inputs; give each "
                               f"forward argument ({', '.join(names)}) as --input NAME=D0,D1")
        given = {name: (shape, dtype) for name, shape, dtype in specs}
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise CompileError(f"--input {unknown}: forward takes {names}")
        names = [n for n in names if n in given]
        args = tuple(torch.randn(given[n][0]).to(getattr(torch, given[n][1])) for n in names)
    dims: dict[str, object] = {}
    shapes: dict[str, dict] = {}
    for name, dim, symbol, lo, hi in dynamic:
        if name not in names:
            raise CompileError(f"--dynamic {name}:{dim}: forward takes {names}")
        if symbol not in dims:
            dims[symbol] = torch.export.Dim(symbol, min=lo if lo is not None else 1,
                                            max=hi if hi is not None else 2**31 - 2)
        shapes.setdefault(name, {})[dim] = dims[symbol]
    dynamic_shapes = {n: shapes.get(n) for n in names[:len(args)]} if shapes else None
    with torch.no_grad():
        return torch.export.export(module.eval(), tuple(args), dynamic_shapes=dynamic_shapes)


def cmd_compile(args) -> int:
    import aotc

    options = dict(args.option or [])
    if args.model_name:
        options["model_name"] = args.model_name
    if args.target:
        options["target"] = args.target
    start = time.perf_counter()
    program = (export_from_factory(args.program, args.input or [], args.dynamic or [])
               if ".py:" in args.program else args.program)
    path = aotc.compile_and_package(program, package_path=args.output, options=options)
    print(f"{path} (compiled in {time.perf_counter() - start:.2f} s)")
    return 0


def cmd_prepare(args) -> int:
    """Build the shipped kernels and the models' precompiled prelude for this machine (or
    the target named) now, so no model compile pays for them."""
    from aotc.cxx.compiler import build_kernels, build_prelude
    from aotc.options import Options

    start = time.perf_counter()
    target = Options.parse({"target": args.target, "isa": args.isa}).compile_target()
    objects = build_kernels(target)
    prelude = "the precompiled prelude" if build_prelude(target) else "no precompiled prelude"
    print(f"aotc kernels for {target.arch} ({target.architecture}) and {prelude} ready in "
          f"{time.perf_counter() - start:.2f} s: {', '.join(o.name for o in objects)}")
    return 0


def ops_markdown() -> str:
    """The op coverage table (docs/OPS.md): every ATen overload with a lowering, by family."""
    from aotc.frontend.complex import complex_ops as complex_forms
    from aotc.lowering import covered_ops

    by_family: dict[str, list[str]] = {}
    for op, family in covered_ops().items():
        by_family.setdefault(family, []).append(op)
    lines = ["# Op coverage", "",
             "ATen overloads aotc lowers directly, by family (generated by `aotc ops --markdown`).",
             "Ops not listed compile when their registered decomposition reaches these; the",
             "OpInfo sweep (`tests/opinfo`) checks them against PyTorch.", ""]
    for family in sorted(by_family):
        lines += [f"## {family} ({len(by_family[family])})", ""]
        lines += [f"- `{op}`" for op in by_family[family]] + [""]
    complex_ops = complex_forms()
    lines += [f"## complex ({len(complex_ops)})", "",
              "Ops computed on complex64 and complex128 values, every overload, as real math on",
              "(real, imag) pairs (`frontend/complex_ops.py`, `complex_views.py`); another op on",
              "complex values compiles when its decomposition reaches these, and is refused",
              "otherwise.", ""]
    lines += [f"- `{op.replace('::', '.')}`" for op in complex_ops] + [""]
    return "\n".join(lines)


def cmd_ops(args) -> int:
    from aotc.lowering import covered_ops

    if args.markdown:
        print(ops_markdown(), end="")
        return 0
    for op, family in covered_ops().items():
        print(f"{family:10s} {op}")
    return 0


def add_build_commands(sub) -> None:
    p = sub.add_parser("compile", help="compile a saved export, or FILE.py:FACTORY",
                       description="Compile a program saved with torch.export.save, or the "
                       "module FILE.py:FACTORY() returns (example inputs from --input, dynamic "
                       "dims from --dynamic), into a .pt2 package.")
    p.add_argument("program", help="saved_program.pt2, or module.py:factory")
    p.add_argument("-o", "--output", required=True, help="the .pt2 package to write")
    p.add_argument("--input", action="append", type=parse_spec, metavar="NAME=D0,D1[:DTYPE]",
                   help="an example input of the factory's module (repeat, in forward order)")
    p.add_argument("--dynamic", action="append", type=parse_dynamic,
                   metavar="INPUT:DIM=SYMBOL[:MIN:MAX]", help="a dynamic dim (repeatable)")
    p.add_argument("--model-name", help="the model's name inside the package")
    p.add_argument("--target", help="what the package runs on: host (default), an architecture "
                   "(x86_64, aarch64: its baseline) or a level (avx2, neon-dotprod...)")
    p.add_argument("--option", action="append", type=parse_option, metavar="KEY=VALUE")
    p.set_defaults(fn=cmd_compile)
    p = sub.add_parser("prepare", help="build the shipped kernels and the models' precompiled "
                       "prelude for this machine ahead of time")
    p.add_argument("--target", default="host", help="host (default), x86_64 or aarch64")
    p.add_argument("--isa", default="host", help="host (default), avx512, avx2, sse2, "
                   "neon-dotprod or neon")
    p.set_defaults(fn=cmd_prepare)
    p = sub.add_parser("ops", help="list the ATen ops aotc lowers")
    p.add_argument("--markdown", action="store_true", help="as the docs/OPS.md table")
    p.set_defaults(fn=cmd_ops)
