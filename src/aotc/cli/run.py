"""`aotc run` (inputs from .npy/.npz or random by spec, outputs to .npz, a summary table) and
`aotc bench` (latency percentiles and throughput at given thread counts, with progress)."""
from __future__ import annotations

import time

import numpy as np

from .common import console, parse_dim, parse_spec, plain, random_array


def _eval_size(size, dims: dict[str, int]) -> int:
    if isinstance(size, int):
        return size
    return int(eval(size, {"__builtins__": {}}, dict(dims)))  # schema: arithmetic over symbols


def _default_dims(meta: dict, given: dict[str, int]) -> dict[str, int]:
    """Symbol values: given by symbol (s0=8) or by input dim (x:0=8), else 8 within range."""
    from aotc.errors import InputError

    dims = {}
    sizes = {i["name"]: i["sizes"] for i in meta["inputs"] if i["kind"] == "tensor"}
    for key, value in given.items():
        name, _, dim = key.partition(":")
        if dim:
            size = sizes.get(name, [])[int(dim)] if dim.isdigit() and int(dim) < len(
                sizes.get(name, [])) else None
            if not isinstance(size, str) or size not in meta["symbols"]:
                raise InputError(f"--dim {key}: not a dynamic dim of the inputs {sizes}")
            key = size
        elif key not in meta["symbols"]:
            raise InputError(f"--dim {key}: the model's symbols are {sorted(meta['symbols'])}")
        dims[key] = value
    for sym, (lo, hi) in meta["symbols"].items():
        if sym not in dims:  # 8 if the range allows it
            dims[sym] = max(lo, min(8, hi if hi is not None else 8))
    return dims


def gather_inputs(meta: dict, args) -> list[np.ndarray]:
    """The model's tensor inputs in order: from --inputs/--input files, --random specs, or
    random arrays of the compiled shapes (symbols bound by --dim, else 8 within range)."""
    from aotc.errors import InputError

    rng = np.random.default_rng(args.seed)
    given: dict[str, np.ndarray] = {}
    if args.inputs:
        with np.load(args.inputs) as npz:
            given.update({k: npz[k] for k in npz.files})
    for text in args.input or []:
        name, sep, file = text.partition("=")
        if not sep:
            raise InputError(f"--input is NAME=FILE.npy, got {text!r}")
        given[name] = np.load(file)
    for name, shape, dtype in args.random or []:
        given[name] = random_array(shape, dtype, rng)
    dims = _default_dims(meta, dict(args.dim or []))
    tensors = [i for i in meta["inputs"] if i["kind"] == "tensor"]
    unknown = sorted(set(given) - {i["name"] for i in tensors})
    if unknown:
        raise InputError(f"inputs {unknown} are not the model's; it takes "
                         f"{[i['name'] for i in tensors]}")
    out = []
    for i in tensors:
        if i["name"] in given:
            out.append(given[i["name"]])
        else:
            shape = tuple(_eval_size(s, dims) for s in i["sizes"])
            out.append(random_array(shape, np.dtype(_numpy_dtype(i["dtype"])).name, rng))
    return out


def call_arguments(meta: dict, tensors: list) -> tuple[tuple, dict]:
    """The (args, kwargs) that call the model with `tensors` (gather_inputs' order) and the
    constants export specialized, nested as the exported program takes them: a model
    exported with keyword inputs is called with keywords."""
    from aotc.runtime import pytree

    it = iter(tensors)
    leaves = [next(it) if i["kind"] == "tensor" else i["value"] for i in meta["inputs"]]
    spec = meta["in_spec"]
    if spec["kind"] == "tuple" and len(spec["children"]) == 2:
        args, kwargs = pytree.unflatten(spec, leaves)
        return tuple(args), dict(kwargs)
    return tuple(leaves), {}


def _numpy_dtype(name: str) -> str:
    from aotc.dtypes import DType

    return DType.from_name(name).numpy_name


def _leaves(outputs) -> list:
    if isinstance(outputs, dict):
        return [x for v in outputs.values() for x in _leaves(v)]
    if isinstance(outputs, (list, tuple)):
        return [x for v in outputs for x in _leaves(v)]
    return [outputs] if isinstance(outputs, np.ndarray) else []


def cmd_run(args) -> int:
    from rich.table import Table

    import aotc

    model = aotc.load_package(args.package, args.model, num_threads=args.threads)
    inputs = gather_inputs(model.package_metadata, args)
    call_args, call_kwargs = call_arguments(model.package_metadata, inputs)
    start = time.perf_counter()
    outputs = model(*call_args, **call_kwargs)
    seconds = time.perf_counter() - start
    leaves = _leaves(outputs)
    if args.output:
        np.savez(args.output, **{f"output_{k}": a for k, a in enumerate(leaves)})
    table = Table(title=f"{model.name}: one call in {seconds * 1e3:.3f} ms"
                  + (f", outputs in {args.output}" if args.output else ""), title_justify="left")
    for col in ("", "name", "dtype", "shape", "min", "max", "mean"):
        table.add_column(col)
    names = [i["name"] for i in model.package_metadata["inputs"] if i["kind"] == "tensor"]
    rows = [("input", n, a) for n, a in zip(names, inputs)]
    rows += [("output", f"output_{k}", a) for k, a in enumerate(leaves)]
    for kind, name, a in rows:
        stats = (("", "", "") if a.size == 0 or a.dtype == bool else
                 (f"{a.min():.5g}", f"{a.max():.5g}", f"{a.astype(np.float64).mean():.5g}"))
        table.add_row(*plain(kind, name, a.dtype, list(a.shape), *stats))
    console().print(table)
    return 0


def cmd_bench(args) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
    from rich.table import Table

    import aotc

    out = console()
    if args.profile is not None:
        from .profile import cmd_profile

        return cmd_profile(args, out)
    threads = [int(t) for t in str(args.threads).split(",") if t.strip()]
    results = []
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=out, transient=False) as progress:
        for n in threads:
            model = aotc.load_package(args.package, args.model, num_threads=n)
            inputs = gather_inputs(model.package_metadata, args)
            call_args, call_kwargs = call_arguments(model.package_metadata, inputs)
            for _ in range(args.warmup):
                model(*call_args, **call_kwargs)
            task = progress.add_task(f"{n} thread(s)", total=args.iters)
            latencies = np.empty(args.iters)
            step = max(1, args.iters // 100)  # the bar costs microseconds: move it 100 times
            start = time.perf_counter()
            for k in range(args.iters):
                t0 = time.perf_counter()
                model(*call_args, **call_kwargs)
                latencies[k] = time.perf_counter() - t0
                if (k + 1) % step == 0 or k + 1 == args.iters:
                    progress.update(task, completed=k + 1)
            results.append((n, latencies, time.perf_counter() - start))
    table = Table(title=f"{args.package}: {args.iters} calls after {args.warmup} warm-up",
                  title_justify="left")
    for col in ("threads", "p50 ms", "p90 ms", "p99 ms", "mean ms", "calls/s"):
        table.add_column(col, justify="right")
    for n, lat, total in results:
        p50, p90, p99 = np.percentile(lat, [50, 90, 99]) * 1e3
        table.add_row(str(n), f"{p50:.4f}", f"{p90:.4f}", f"{p99:.4f}", f"{lat.mean() * 1e3:.4f}",
                      f"{len(lat) / total:.1f}")
    out.print(table)
    return 0


def _add_input_flags(p) -> None:
    p.add_argument("--model", help="the model's name in the package (default: the only one)")
    p.add_argument("--inputs", help="an .npz of inputs by name")
    p.add_argument("--input", action="append", metavar="NAME=FILE.npy", help="one input (repeat)")
    p.add_argument("--random", action="append", type=parse_spec, metavar="NAME=D0,D1[:DTYPE]",
                   help="a random input of this shape")
    p.add_argument("--dim", action="append", type=parse_dim, metavar="SYMBOL=INT",
                   help="a dynamic dim's size for random inputs, by symbol or as INPUT:DIM=INT "
                   "(default 8, within range)")
    p.add_argument("--seed", type=int, default=0)


def add_run_commands(sub) -> None:
    p = sub.add_parser("run", help="run a package once on given or random inputs")
    p.add_argument("package")
    _add_input_flags(p)
    p.add_argument("-o", "--output", help="write the outputs to this .npz")
    p.add_argument("--threads", type=int, default=None, help="OpenMP threads (default: compiled)")
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("bench", help="latency percentiles and throughput of a package")
    p.add_argument("package")
    _add_input_flags(p)
    p.add_argument("--threads", default="1", help="thread counts, comma-separated (1,2,4)")
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--profile", nargs="?", const="", default=None, metavar="TRACE.json",
                   help="time every kernel of each call: a table of their shares and a "
                   "Chrome-trace JSON for Perfetto (default PACKAGE.trace.json here)")
    p.set_defaults(fn=cmd_bench)
