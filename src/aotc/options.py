"""Compile options: the `options` dict of compile_and_package (`inductor_configs` of the
torch spelling). Unknown keys are an error: an option aotc would ignore is a lie."""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

from .errors import CompileError


@dataclass(frozen=True)
class Options:
    num_threads: int = 0  # default thread count of the compiled model; 0: OMP_NUM_THREADS/cores
    isa: str = "host"  # host | avx512 | avx2 | sse2 | native
    opt_level: str = "-O3"
    debug_dir: str | None = None  # dump every pipeline stage here
    model_name: str = "model"  # the name inside the package

    @classmethod
    def parse(cls, options: dict | None) -> Options:
        options = dict(options or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise CompileError(f"unknown option(s) {unknown}; aotc understands {sorted(known)}")
        if "debug_dir" not in options and os.environ.get("AOTC_DEBUG_DIR"):
            options["debug_dir"] = os.environ["AOTC_DEBUG_DIR"]
        opts = cls(**options)
        if not isinstance(opts.num_threads, int) or opts.num_threads < 0:
            raise CompileError(f"num_threads must be a non-negative int, got {opts.num_threads!r}")
        if opts.opt_level not in ("-O0", "-O1", "-O2", "-O3", "-Os"):
            raise CompileError(f"opt_level must be one of -O0..-O3/-Os, got {opts.opt_level!r}")
        if not opts.model_name.replace("_", "").replace("-", "").isalnum():
            raise CompileError(f"model_name must be letters, digits, '_' or '-', "
                               f"got {opts.model_name!r}")
        return opts

    def debug_path(self, model: str) -> Path | None:
        return Path(self.debug_dir) / model if self.debug_dir else None
