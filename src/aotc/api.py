"""compile_and_package and aot_compile: the compiler's front door (needs torch)."""
from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch
import torch.utils._pytree as pytree

from . import __version__
from .codegen.cpp.describe import constant_layout
from .errors import AotcError, CompileError
from .frontend.importer import to_sympy
from .ir.nodes import Program
from .options import Options
from .package.api import CompiledArtifact, package_aoti
from .package.filelike import is_filelike
from .package.format import FORMAT_VERSION, ModelFiles
from .passes.pipeline import Compiled, compile_program
from .runtime.abi import ABI_VERSION
from .scheduler.precision import check_precision, pack_panels_bf16, target_metadata
from .scheduler.prepack import pack_panels
from .target import host

log = logging.getLogger("aotc.perf")


def _exported(ep) -> torch.export.ExportedProgram:
    if isinstance(ep, torch.export.ExportedProgram):
        return ep
    if isinstance(ep, (str, os.PathLike)) or is_filelike(ep):
        return torch.export.load(ep)
    raise CompileError(f"expected a torch.export.ExportedProgram (or a file saved by "
                       f"torch.export.save), got {type(ep).__name__}")


def _json_value(value, what: str):
    """`value` as it reads back from JSON (tuples become lists), or a CompileError."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        raise CompileError(f"{what} holds {value!r}, which a package cannot store as JSON; "
                           "register the type with to_dumpable_context/from_dumpable_context "
                           "(torch.utils._pytree.register_pytree_node)") from None


def _node_spec(spec, kids: list) -> dict:
    """A node of a type registered with torch's pytree: a dataclass given to
    torch.export.register_dataclass, a ModelOutput-like mapping, any register_pytree_node
    class. The runtime rebuilds the type itself where it can find the class (module and
    qualname) with the flatten context recorded here, else a dict keyed by `fields` (a tuple
    when the context names no fields): runtime/pytree.py."""
    t, context = spec.type, spec.context
    name = f"{t.__module__}.{t.__qualname__}"
    entry = {"kind": "node", "module": t.__module__, "qualname": t.__qualname__,
             "children": kids}
    serialized = pytree.SUPPORTED_SERIALIZED_TYPES.get(t)
    if serialized is not None and serialized.to_dumpable_context is not None:
        entry["context"] = _json_value(serialized.to_dumpable_context(context),
                                       f"the pytree context of {name}")
        entry["context_dumped"] = True
    else:
        entry["context"] = _json_value(context, f"the pytree context of {name}")
    # the field names, read from the context itself (a dumped one is the type's own string)
    ctx = json.loads(json.dumps(context)) if _is_json(context) else None

    def names(x) -> bool:
        return isinstance(x, list) and all(isinstance(f, str) for f in x) \
            and len(set(x)) == len(x)

    if dataclasses.is_dataclass(t) and isinstance(ctx, list) and len(ctx) == 2 \
            and names(ctx[0]) and names(ctx[1]) and len(ctx[0]) == len(kids):
        entry["fields"], entry["none_fields"] = ctx  # register_dataclass: set and None fields
    elif names(ctx) and len(ctx) == len(kids):
        entry["fields"] = ctx  # a mapping's keys
    return entry


def _is_json(value) -> bool:
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


def spec_to_json(spec) -> dict:
    """torch's TreeSpec as the runtime's JSON structure."""
    if spec.is_leaf():
        return {"kind": "leaf"}
    kids = [spec_to_json(c) for c in spec.children()]
    t = spec.type
    if t is type(None):
        return {"kind": "none"}
    if t is dict or getattr(t, "__name__", "") in ("OrderedDict", "defaultdict"):
        keys = list(spec.context)
        if not all(isinstance(k, (str, int)) for k in keys):
            raise CompileError(f"dict keys {keys} cannot be stored in a package")
        return {"kind": "dict", "keys": keys, "children": kids}
    if t is list:
        return {"kind": "list", "children": kids}
    if t is tuple:
        return {"kind": "tuple", "children": kids}
    if isinstance(t, type) and issubclass(t, tuple):  # a namedtuple, or torch.return_types
        fields = getattr(t, "_fields", None) or getattr(t, "__match_args__", None)
        if fields is None or len(fields) != len(kids):
            return {"kind": "tuple", "children": kids}
        return {"kind": "tuple", "children": kids, "name": f"{t.__module__}.{t.__qualname__}",
                "fields": list(fields)}
    if isinstance(t, type) and t in pytree.SUPPORTED_NODES:
        return _node_spec(spec, kids)
    raise CompileError(f"inputs/outputs of type {t} are not supported (tuples, lists, dicts, "
                       "and types registered with torch's pytree)")


def pack_weights(program: Program) -> tuple[bytes, list[dict]]:
    """weights.bin and its table, laid out as the model library describes it."""
    blob = bytearray()
    table = []
    for c, (offset, nbytes) in zip(program.constants, constant_layout(program)):
        t = c.data
        if c.packing is not None:  # in the GEMM kernel's panel layout for the target
            pack = pack_panels_bf16 if c.packing.dtype == "bfloat16" else pack_panels
            raw = pack(t.reshape(-1).numpy(), c.packing).tobytes()
        else:
            raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        if len(raw) != nbytes:
            raise CompileError(f"constant {c.fqn} holds {len(raw)} bytes; its buffer needs {nbytes}")
        blob.extend(b"\0" * (offset - len(blob)))
        buf = program.buffers[c.buffer]
        entry = {"name": c.fqn, "dtype": buf.dtype.name, "sizes": [int(s) for s in buf.sizes],
                 "offset": offset, "nbytes": nbytes}
        if c.folded_from:
            entry["folded_from"] = list(c.folded_from)
        if c.packing is not None:  # what the bytes hold; a loader packs a swapped value alike
            entry["packing"] = {"layout": "gemm_b_panels", **asdict(c.packing)}
        table.append(entry)
        blob.extend(raw)
    return bytes(blob), table


def _size_json(s):
    return int(s) if s.is_Integer else str(s)


def build_metadata(ep, compiled: Compiled, opts: Options, constants: list[dict]) -> dict:
    p = compiled.program
    user_inputs = [s for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    by_name = {s.name: s for s in p.inputs}
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    inputs = []
    for s in user_inputs:
        name = s.arg.name
        if name in by_name:
            buf = p.buffers[by_name[name].buffer]
            val = placeholders[name].meta["val"]
            inputs.append({"name": name, "kind": "tensor", "dtype": buf.dtype.name,
                           "sizes": [_size_json(x) for x in buf.sizes]})
            if isinstance(val, torch.Tensor):  # an int input travels as a 0-dim tensor
                inputs[-1]["strides"] = [_size_json(to_sympy(x)) for x in val.stride()]
            if buf.name in p.updates:  # the run writes its new value into it
                inputs[-1]["mutated"] = True
            if buf.name in p.scalar_inputs:  # a Python int, passed as a 0-dim int64 tensor
                inputs[-1]["scalar"] = "int"
        else:
            val = placeholders[name].meta.get("val")
            inputs.append({"name": name, "kind": "scalar", "value": val})
    outputs = [{"name": o, "dtype": p.buffers[o].dtype.name,
                "sizes": [_size_json(x) for x in p.buffers[o].sizes]} for o in p.outputs]
    leaves = [{"kind": "tensor", "index": p.outputs.index(leaf.buffer)} if leaf.buffer
              else {"kind": "constant", "value": leaf.value} for leaf in p.output_leaves]
    for leaf, entry in zip(p.output_leaves, leaves):
        if leaf.scalar:  # a symbolic value: returned as a Python number
            entry["scalar"] = leaf.scalar
    target = opts.compile_target()
    return {
        "format_version": FORMAT_VERSION,
        "abi_version": ABI_VERSION,
        "aotc_version": __version__,
        "torch_version": torch.__version__,
        "target": {**target.metadata(), "architecture": target.architecture,
                   **target_metadata(opts.precision, target)},
        "inputs": inputs,
        "outputs": outputs,
        "output_leaves": leaves,
        "symbols": {str(k): [lo, hi] for k, (lo, hi) in sorted(p.symbols.items(), key=str)},
        "in_spec": spec_to_json(ep.call_spec.in_spec),
        "out_spec": spec_to_json(ep.call_spec.out_spec),
        "constants": constants,
        # registered buffers the program updates in place: model state
        "state": [c.fqn for c in p.constants if c.buffer in p.updates],
        # output sizes depend on input values (.item()), not only on input sizes
        "sizes_follow_data": bool(p.item_symbols),
        "num_threads": opts.num_threads,
        "freezing": opts.freezing,
        "user_metadata": dict(opts.metadata),
        "compile_seconds": round(sum(compiled.timings.values()), 4),
        "stage_seconds": {k: round(v, 4) for k, v in compiled.timings.items()},
    }


def library_metadata(name: str, opts: Options) -> dict[str, str]:
    """What the model library reports about itself (aotc_describe_metadata)."""
    target = opts.compile_target()
    return {"model_name": name, "aotc_version": __version__, "torch_version": torch.__version__,
            **target.metadata(), "num_threads": str(opts.num_threads)}


def _compile_one(prog, opts: Options, name: str, given: frozenset = frozenset()) -> ModelFiles:
    prog = _exported(prog)
    target = opts.compile_target()
    if opts.max_autotune:  # measure ISA levels and thread counts; `given` options stay fixed
        from .autotune import autotune

        if host.machine() not in target.machines:
            raise CompileError(f"max_autotune measures the model on this machine, which cannot "
                               f"run code for {target.architecture} (this is {host.machine()}); "
                               f"compile without max_autotune, or on an {target.architecture} "
                               "machine")
        files, _ = autotune(prog, lambda isa: _compile_one(prog, replace(
            opts, isa=isa, max_autotune=False), name),
            # bf16 GEMMs run on AVX-512 alone: the AVX2 candidate would be refused; the
            # target option names one level
            opts.isa if "isa" in given or opts.precision == "bf16"
            else target.isa if "target" in given else None,
            opts.num_threads if given & {"num_threads", "cpp.threads"} else None)
        return files
    t0 = time.perf_counter()
    named = Options.parse({**asdict(opts), "model_name": name})
    check_precision(opts.precision, target, opts.on_host())
    compiled = compile_program(prog, target, opts.opt_level,
                               named.debug_path(name), header=f"model '{name}'",
                               metadata=library_metadata(name, named), freezing=opts.freezing,
                               precision=opts.precision)
    weights, table = pack_weights(compiled.program)
    meta = build_metadata(prog, compiled, named, table)
    log.info("compiled model %r in %.2f s (%s)", name, time.perf_counter() - t0,
             "cached build" if compiled.cached else "fresh build")
    return ModelFiles(meta, Path(compiled.library).read_bytes(), compiled.source, weights)


def _typed_errors(fn):
    """The boundary of compiling: whatever is not already an aotc error leaves as a
    CompileError (the original as its __cause__), so callers catch one hierarchy."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AotcError:
            raise
        except Exception as e:
            raise CompileError(f"compiling failed: {type(e).__name__}: {e}") from e
    return run


@_typed_errors
def compile_and_package(ep, package_path=None, options=None):
    """Compile an ExportedProgram (or {name: ExportedProgram}) into a .pt2 package; returns its
    path (or `package_path` itself when it is a file-like object)."""
    opts = Options.parse(options)
    if not opts.package:
        raise CompileError("compile_and_package always writes a package; 'aot_inductor.package': "
                           "False has no meaning here (aot_compile + package_aoti package later)")
    programs = ep if isinstance(ep, dict) else {opts.model_name: ep}
    if package_path is None:
        package_path = os.path.join(tempfile.mkdtemp(prefix="aotc-"), "model.pt2")
    if not is_filelike(package_path):
        package_path = os.fspath(package_path)
        if not package_path.endswith(".pt2"):
            raise CompileError(f"package_path must end in .pt2, got {package_path!r}")
    given = frozenset(options or {})
    artifacts = {name: CompiledArtifact(name, _compile_one(prog, opts, name, given))
                 for name, prog in programs.items()}
    return package_aoti(package_path, artifacts)


@_typed_errors
def aot_compile(program, args=(), kwargs=None, *, options=None) -> CompiledArtifact:
    """torch._inductor.aot_compile's spelling: compile one program, package nothing yet.

    `program` is an ExportedProgram (or a file saved by torch.export.save), or an nn.Module
    exported here with `args`/`kwargs`. The result goes to `aotc.package.package_aoti`."""
    opts = Options.parse(options)
    if not opts.package:
        raise CompileError("aot_compile with 'aot_inductor.package': False would return a bare "
                           "model.so; aotc's libraries need their weights and metadata, so "
                           "aot_compile always returns an artifact for aotc.package.package_aoti")
    if isinstance(program, torch.nn.Module):
        with torch.no_grad():
            program = torch.export.export(program, tuple(args), kwargs or {})
    elif args or kwargs:
        raise CompileError("aot_compile: example args are only taken with an nn.Module; an "
                           "ExportedProgram already carries its inputs")
    return CompiledArtifact(opts.model_name, _compile_one(program, opts, opts.model_name,
                                                          frozenset(options or {})))


def aoti_compile_and_package(ep, package_path=None, inductor_configs=None):
    """torch._inductor.aoti_compile_and_package's spelling."""
    return compile_and_package(ep, package_path=package_path, options=inductor_configs)
