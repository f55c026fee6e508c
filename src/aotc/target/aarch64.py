"""64-bit Arm (aarch64): the levels aotc builds for (neon, the Armv8.0 baseline, and
neon-dotprod, Armv8.2 with fp16 and dotprod), how the cross compiler selects each, and the
tile sizes its kernels use."""
from __future__ import annotations

from .spec import Loops, Target

ARCHITECTURE = "aarch64"
MACHINES = frozenset({"aarch64", "arm64"})
# Debian's cross compiler (g++-aarch64-linux-gnu), also the name of the native g++ on a
# Debian or Ubuntu arm64 machine; its own variable, so that $CXX keeps naming the host's
COMPILER, COMPILER_ENV = "aarch64-linux-gnu-g++", "AOTC_CXX_AARCH64"

# NR/KC of the NEON micro-kernels (kernels/gemm_panels.h under __ARM_NEON): 6x16
# tiles at every level, so a prepacked weight has AVX2's layout.
NR, KC = 16, 512

# x86's blocking: 16 lanes are four q registers of float, 64 columns sixteen (of the 32), a
# block of 1024 elements 64 terms per lane, a tile of 16 floats one 64-byte cache line.
# Nothing measured on an Arm core asks for other values yet.
LOOPS = Loops(lanes=16, columns=64, window=64, block=1024, tile=16, parallel_min_work=16384)

# the features each level needs, as /proc/cpuinfo spells them: Armv8.2-A makes CRC32, LSE
# atomics and RDMA mandatory; +fp16 adds half-precision arithmetic, +dotprod sdot/udot
_V80 = frozenset({"fp", "asimd"})
_V82 = _V80 | {"crc32", "atomics", "asimdrdm", "fphp", "asimdhp", "asimddp"}


def _level(isa: str, arch: str, features: frozenset[str]) -> Target:
    # no bf16 GEMM: kernels/gemm_bf16.cpp has only x86's vdpbf16ps kernel
    return Target(device="cpu", arch=arch, isa=isa, architecture=ARCHITECTURE, machines=MACHINES,
                  features=features, compiler=COMPILER, compiler_env=COMPILER_ENV,
                  arch_flags=(f"-march={arch}",), vector_bytes=16, vector_convs=True,
                  gemm_nr=NR, gemm_kc=KC,
                  bf16_feature=None, int8_dot_features=frozenset(),  # no sdot path yet
                  tune_isas=(isa,), loops=LOOPS)


# lowest first; the arches are g++'s -march values, which the C++ loader parses
LEVELS = {
    "neon": _level("neon", "armv8-a", _V80),
    "neon-dotprod": _level("neon-dotprod", "armv8.2-a+fp16+dotprod", _V82),
}


def native(flags: frozenset[str]) -> Target:
    """-march=native on an aarch64 machine: NEON at every level, so the same tiles."""
    return _level("native", "native", frozenset())


def host_level(flags: frozenset[str]) -> Target:
    """The highest level a CPU with `flags` runs."""
    return LEVELS["neon-dotprod"] if _V82 <= flags else LEVELS["neon"]
