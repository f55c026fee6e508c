"""The Target record: one ISA level of one architecture, with everything the compiler and the
loaders ask of it. The values live in the architecture files (x86_64.py)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Loops:
    """How generated loop nests block their work (codegen/cpp/kernels.py)."""

    lanes: int  # independent accumulators of a row reduction
    columns: int  # outputs a column reduction accumulates side by side
    window: int  # reduced elements per output up to which a short-row reduction goes by columns
    block: int  # elements per lane block, folded into the total after each
    tile: int  # the block edge of a transposing copy
    parallel_min_work: int  # elements (times reduction length) below which one thread runs


@dataclass(frozen=True)
class Target:
    """What generated code is compiled for. `device`, `arch` and `isa` are what a package
    records (`metadata()`); the other fields are facts of the level that the compiler, the
    scheduler and the loaders read."""

    device: str  # "cpu" (the only backend so far)
    arch: str  # the -march value, recorded in packages: x86-64, x86-64-v3, x86-64-v4, native
    isa: str  # the level's name (the `isa` option): sse2, avx2, avx512, native
    architecture: str  # the processor family: "x86_64"
    machines: frozenset[str]  # what platform.machine() says on a processor of the family
    features: frozenset[str]  # CPU features the level needs, as /proc/cpuinfo spells them
    compiler: str  # the C++ compiler command (a cross compiler where the host differs)
    compiler_env: str  # the environment variable that names another compiler
    arch_flags: tuple[str, ...]  # the compiler flags that select the level
    vector_bytes: int  # width of the level's SIMD registers
    # the convolution kernel's vector paths (kernels/conv_direct.h, conv_depthwise.h) are
    # built: they read and write channels-last activations (scheduler/layout.py)
    vector_convs: bool
    gemm_nr: int  # GEMM micro-kernel panel width: the layout of prepacked weights
    gemm_kc: int  # GEMM slice depth of that layout
    bf16_feature: str | None  # the CPU feature bf16 GEMMs need; None: the level has none
    # CPU features any one of which gives the int8 GEMM (kernels/gemm_int8.cpp) dot-product
    # instructions, which it picks at run time; without one, integer products are no faster
    # than float32 ones (passes/quantized.py)
    int8_dot_features: frozenset[str]
    tune_isas: tuple[str, ...]  # the levels max_autotune measures on a host of this level
    loops: Loops

    def metadata(self) -> dict[str, str]:
        """The target as a package records it (and model libraries report it)."""
        return {"device": self.device, "arch": self.arch, "isa": self.isa}
