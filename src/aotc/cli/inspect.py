"""`aotc inspect PACKAGE` (also `aotc info`): per model, the inputs and outputs, symbolic dims
and their ranges, constants and their sizes, the target ISA, versions and stage timings."""
from __future__ import annotations

from .common import console, plain


def _shape(entry: dict) -> str:
    return f"{entry['dtype']}[{', '.join(map(str, entry['sizes']))}]"


def _nbytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def describe(out, path: str, name: str, meta: dict, all_constants: bool) -> None:
    from rich.table import Table

    target = meta["target"]
    out.print(f"[bold]model {name!r}[/bold] in {path}: aotc {meta['aotc_version']}, torch "
              f"{meta.get('torch_version', '?')}, format {meta['format_version']}, ABI "
              f"{meta['abi_version']}; target {target['device']} {target['arch']} "
              f"({target['isa']}); {meta['num_threads'] or 'default'} threads; freezing "
              f"{meta.get('freezing', False)}", highlight=False)
    io = Table(title="inputs and outputs", title_justify="left")
    for col in ("", "name", "dtype, sizes", "strides"):
        io.add_column(col)
    for i in meta["inputs"]:
        if i["kind"] == "tensor":
            io.add_row(*plain("input", i["name"], _shape(i), i.get("strides", "")))
        else:
            io.add_row(*plain("input", i["name"], f"constant {i['value']!r}", ""))
    for o in meta["outputs"]:
        io.add_row(*plain("output", o["name"], _shape(o), ""))
    out.print(io)
    if meta["symbols"]:
        sym = Table(title="symbolic dims", title_justify="left")
        for col in ("symbol", "min", "max"):
            sym.add_column(col)
        for s, (lo, hi) in meta["symbols"].items():
            sym.add_row(*plain(s, lo, "inf" if hi is None else hi))
        out.print(sym)
    constants = meta["constants"]
    total = sum(c["nbytes"] for c in constants)
    table = Table(title=f"{len(constants)} constants, {total} bytes ({_nbytes(total)})",
                  title_justify="left")
    for col in ("name", "dtype, sizes", "bytes", "folded from"):
        table.add_column(col)
    shown = constants if all_constants else constants[:40]
    for c in shown:
        table.add_row(*plain(c["name"], _shape(c), c["nbytes"], ", ".join(c.get("folded_from", []))))
    out.print(table)
    if len(shown) < len(constants):
        out.print(f"... and {len(constants) - len(shown)} more (--all-constants lists them)")
    if meta.get("stage_seconds"):
        stages = Table(title=f"compile: {meta.get('compile_seconds', 0):.3f} s",
                       title_justify="left")
        stages.add_column("stage")
        stages.add_column("seconds", justify="right")
        for stage, t in meta["stage_seconds"].items():
            stages.add_row(*plain(stage, f"{t:.4f}"))
        out.print(stages)
    if meta.get("autotune"):
        chosen = meta["autotune"]["chosen"]
        tried = ", ".join(f"{r['isa']}/{r['num_threads']}t {r['seconds'] * 1e6:.1f} us"
                          for r in meta["autotune"]["measured"])
        out.print(f"max_autotune chose {chosen['isa']} with {chosen['num_threads']} thread(s) "
                  f"from: {tried}", highlight=False)
    if meta.get("user_metadata"):
        out.print("metadata: " + ", ".join(f"{k}={v}" for k, v in meta["user_metadata"].items()),
                  highlight=False)


def cmd_inspect(args) -> int:
    from aotc.package.format import PackageReader

    out = console()
    reader = PackageReader(args.package)
    try:
        names = [reader.resolve(args.model)] if args.model else reader.models
        for name in names:
            meta = reader.metadata(name)
            describe(out, args.package, name, meta, args.all_constants)
            if args.verify:  # loading checks CRC-32s; this is the full sha256 check
                reader.verify_digests(name, meta)
                out.print(f"{name}: model.so and weights.bin match their sha256 digests",
                          highlight=False)
    finally:
        reader.close()
    return 0


def add_inspect_commands(sub) -> None:
    for command in ("inspect", "info"):
        p = sub.add_parser(command, help="describe the models of a package")
        p.add_argument("package")
        p.add_argument("--model", help="only this model")
        p.add_argument("--all-constants", action="store_true", help="list every constant")
        p.add_argument("--verify", action="store_true",
                       help="check the sha256 digests of model.so and weights.bin")
        p.set_defaults(fn=cmd_inspect)
