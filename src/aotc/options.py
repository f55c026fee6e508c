"""Compile options: the `options` dict of compile_and_package (`inductor_configs` of the
torch spelling). Unknown keys are an error: an option aotc would ignore is a lie. Inductor
keys with a real aotc meaning are translated; other Inductor keys say what aotc does instead."""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path

from .errors import CompileError
from .target import Target, select_target
from .target.host import has_int8_dot_products

# values of the `precision` option (scheduler/precision.py)
PRECISIONS = ("fp32", "bf16")
# values of the `int8_kernels` option (passes/quantized.py)
INT8_KERNELS = ("auto", "on", "off")

# Inductor's spelling -> aotc's option of the same meaning
INDUCTOR_ALIASES = {
    "cpp.threads": "num_threads",
    "aot_inductor.metadata": "metadata",
    "aot_inductor.package": "package",
}

# Inductor settings aotc has no switch for: what aotc does instead
INSTEAD = {
    "max_autotune_gemm": "max_autotune measures the whole model's ISA level and thread count; "
                         "the GEMM's tiles follow the ISA",
    "coordinate_descent_tuning": "aotc has no Triton kernels to tune; loops are scheduled by rule",
    "epilogue_fusion": "aotc always fuses pointwise chains, reduction prologues and row groups",
    "cpp_wrapper": "aotc always generates one C++ translation unit with a C ABI",
    "aot_inductor.output_path": "pass package_path to compile_and_package (or package_aoti)",
    "aot_inductor.debug_compile": "use opt_level='-O0' and debug_dir to keep the generated C++",
    "aot_inductor.use_runtime_constant_folding": "weights are never folded into code; swap them "
                                                  "with load_constants on a freezing=False build",
    "aot_inductor.debug_intermediate_value_printer": "use aotc.debug.compare(ep, inputs), which "
                                                     "names the first node that diverges from eager",
    "cpp.simdlen": "the vector width follows the 'isa' option (avx512, avx2, sse2)",
    "cpp.enable_kernel_profile": "AOTC_LOGS=perf logs stage timings; `aotc bench` times a package",
    "trace.enabled": "set debug_dir (or AOTC_DEBUG_DIR) to dump every stage, AOTC_LOGS to log them",
    "freezing_discard_parameters": "with freezing=True, weights read only by folded subgraphs "
                                   "are not stored (their names stay) and cannot be swapped",
}

_PREFIX_INSTEAD = {
    "triton.": "aotc generates C++ for the CPU; there are no Triton kernels",
    "cuda.": "aotc compiles for the CPU only",
    "rocm.": "aotc compiles for the CPU only",
    "cpp.": "aotc's C++ code generator takes only num_threads ('cpp.threads'), isa and opt_level",
    "aot_inductor.": "aotc's package options are package, metadata and model_name",
    "trace.": "set debug_dir (or AOTC_DEBUG_DIR) to dump every stage, AOTC_LOGS to log them",
}


@dataclass(frozen=True)
class Options:
    num_threads: int = 0  # default thread count of the compiled model; 0: OMP_NUM_THREADS/cores
    # host | an architecture (x86_64, aarch64: its baseline) | a level: what the code runs on
    target: str = "host"
    isa: str = "host"  # host | native | a level: avx512, avx2, sse2, neon-dotprod, neon
    opt_level: str = "-O3"
    debug_dir: str | None = None  # dump every pipeline stage here
    model_name: str = "model"  # the name inside the package
    freezing: bool = True  # fold subgraphs that read only weights into new constants
    metadata: dict = field(default_factory=dict)  # user key/values, returned by metadata()
    package: bool = True  # aot_inductor.package: aot_compile returns what package_aoti takes
    max_autotune: bool = False  # measure ISA levels and thread counts, keep the fastest
    # fp32 | bf16: "bf16" stores the prepacked GEMM weights as bfloat16 and multiplies them
    # with avx512_bf16 (scheduler/precision.py)
    precision: str = "fp32"
    # auto | on | off: whether the quantized linears and convolutions of PT2E graphs run
    # on the int8 GEMM ("auto": where this machine gives it int8 dot products, VNNI; else
    # their dequantized float32 form, which is as fast there)
    int8_kernels: str = "auto"

    @classmethod
    def parse(cls, options: dict | None) -> Options:
        options = dict(options or {})
        known = {f.name for f in fields(cls)}
        for key in list(options):
            alias = INDUCTOR_ALIASES.get(key)
            if alias is not None:
                if alias in options:
                    raise CompileError(f"options {key!r} and {alias!r} mean the same; give one")
                options[alias] = options.pop(key)
        unknown = sorted(set(options) - known)
        if unknown:
            raise CompileError(_unknown_message(unknown, known))
        if "debug_dir" not in options and os.environ.get("AOTC_DEBUG_DIR"):
            options["debug_dir"] = os.environ["AOTC_DEBUG_DIR"]
        if options.get("num_threads") == -1:  # Inductor's cpp.threads default: all cores
            options["num_threads"] = 0
        opts = cls(**options)
        if (not isinstance(opts.num_threads, int) or isinstance(opts.num_threads, bool)
                or opts.num_threads < 0):
            raise CompileError(f"num_threads must be a non-negative int, got {opts.num_threads!r}")
        if opts.opt_level not in ("-O0", "-O1", "-O2", "-O3", "-Os"):
            raise CompileError(f"opt_level must be one of -O0..-O3/-Os, got {opts.opt_level!r}")
        if not isinstance(opts.model_name, str) or not opts.model_name.replace(
                "_", "").replace("-", "").isalnum():
            raise CompileError(f"model_name must be letters, digits, '_' or '-', "
                               f"got {opts.model_name!r}")
        for key in ("freezing", "package", "max_autotune"):
            if not isinstance(getattr(opts, key), bool):
                raise CompileError(f"{key} must be True or False, got {getattr(opts, key)!r}")
        for key in ("target", "isa"):
            if not isinstance(getattr(opts, key), str):
                raise CompileError(f"{key} must be a string, got {getattr(opts, key)!r}")
        opts.compile_target()
        if opts.precision not in PRECISIONS:
            raise CompileError(f"precision must be one of {list(PRECISIONS)}, got "
                               f"{opts.precision!r}")
        if opts.int8_kernels not in INT8_KERNELS:
            raise CompileError(f"int8_kernels must be one of {list(INT8_KERNELS)}, got "
                               f"{opts.int8_kernels!r}")
        if not isinstance(opts.metadata, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in opts.metadata.items()):
            raise CompileError(f"metadata ('aot_inductor.metadata') must be a dict of strings "
                               f"to strings, got {opts.metadata!r}")
        return opts

    def compile_target(self) -> Target:
        """The target the `target` and `isa` options name (target/__init__.py)."""
        try:
            return select_target(self.target, self.isa)
        except ValueError as e:
            raise CompileError(str(e)) from None

    def integer_products(self, target: Target) -> bool:
        """Whether quantized products compile to the int8 GEMM (`int8_kernels`)."""
        if self.int8_kernels == "auto":
            return has_int8_dot_products(target)
        return self.int8_kernels == "on"

    def on_host(self) -> bool:
        """Whether this machine picks the level: neither option names one."""
        return self.target == "host" and self.isa == "host"

    def debug_path(self, model: str) -> Path | None:
        return Path(self.debug_dir) / model if self.debug_dir else None


def _unknown_message(unknown: list[str], known: set[str]) -> str:
    parts = []
    for key in unknown:
        instead = INSTEAD.get(key) or next(
            (text for prefix, text in _PREFIX_INSTEAD.items() if key.startswith(prefix)), None)
        if instead is None and _is_inductor_key(key):
            instead = ("aotc has no such setting; its options are listed below, and Inductor's "
                       f"{sorted(INDUCTOR_ALIASES)} and freezing are translated")
        parts.append(f"{key!r} ({instead})" if instead else repr(key))
    return (f"unknown option(s) {', '.join(parts)}; aotc understands {sorted(known)} and the "
            f"Inductor keys {sorted(INDUCTOR_ALIASES)}")


def _is_inductor_key(key: str) -> bool:
    try:
        from torch._inductor import config
    except ImportError:
        return False
    try:
        config.get_config_copy()[key]
    except (KeyError, AttributeError):
        return False
    return True
