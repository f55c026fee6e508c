"""compile_and_package and aot_compile: the compiler's front door (needs torch)."""
from __future__ import annotations

import functools
import logging
import os
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from . import __version__
from .errors import AotcError, CompileError
from .options import Options
from .package.api import CompiledArtifact, package_aoti
from .package.filelike import is_filelike
from .package.format import ModelFiles
from .passes.pipeline import compile_program
from .scheduler.precision import check_precision
from .target import host

log = logging.getLogger("aotc.perf")


def _exported(ep) -> torch.export.ExportedProgram:
    if isinstance(ep, torch.export.ExportedProgram):
        return ep
    if isinstance(ep, (str, os.PathLike)) or is_filelike(ep):
        return torch.export.load(ep)
    raise CompileError(f"expected a torch.export.ExportedProgram (or a file saved by "
                       f"torch.export.save), got {type(ep).__name__}")


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
                               precision=opts.precision, num_threads=opts.num_threads,
                               integer_products=named.integer_products(target),
                               user_metadata=opts.metadata)
    log.info("compiled model %r in %.2f s (%s)", name, time.perf_counter() - t0,
             "cached build" if compiled.cached else "fresh build")
    return ModelFiles(compiled.metadata, Path(compiled.library).read_bytes(), compiled.source,
                      compiled.weights.blob)


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
