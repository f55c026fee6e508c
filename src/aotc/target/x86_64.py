"""x86-64: the ISA levels aotc builds for (sse2, avx2, avx512, and native for -march=native),
what each needs of the CPU, how g++ selects it, and the tile sizes its kernels use."""
from __future__ import annotations

from .spec import Loops, Target

ARCHITECTURE = "x86_64"
MACHINES = frozenset({"x86_64", "AMD64"})
COMPILER, COMPILER_ENV = "g++", "CXX"
BF16_FEATURE = "avx512_bf16"  # vdpbf16ps (kernels/gemm_bf16.cpp), as /proc/cpuinfo spells it
# int8 dot products (kernels/gemm_int8.cpp): vpdpbusd, and the AMX tiles (whose processors
# have avx512_vnni too)
INT8_DOT_FEATURES = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})

# The slice depth of every build and the panel width by level (AVX-512: 32, AVX2 and
# portable: 16): NR/KC of kernels/gemm_panels.h, which picks them by __AVX512F__.
KC = 512
NR_AVX512 = 32
NR_OTHER = 16

# The generated loops block alike at every level: 16 lanes are one AVX-512 (or two AVX2)
# vectors of float, 64 columns four AVX-512 vectors, a block of 1024 elements 64 terms per
# lane before they fold into the total, a tile of 16 floats one cache line.
LOOPS = Loops(lanes=16, columns=64, window=64, block=1024, tile=16, parallel_min_work=16384)

_V3 = frozenset({"avx2", "fma", "bmi2"})
_V4 = frozenset({"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx2", "fma"})


def _level(isa: str, arch: str, features: frozenset[str], vector_bytes: int, nr: int,
           bf16: str | None, tune: tuple[str, ...]) -> Target:
    return Target(device="cpu", arch=arch, isa=isa, architecture=ARCHITECTURE, machines=MACHINES,
                  features=features, compiler=COMPILER, compiler_env=COMPILER_ENV,
                  arch_flags=(f"-march={arch}",), vector_bytes=vector_bytes,
                  vector_convs=vector_bytes >= 32, gemm_nr=nr,  # AVX2 and AVX-512
                  gemm_kc=KC, bf16_feature=bf16, int8_dot_features=INT8_DOT_FEATURES,
                  tune_isas=tune, loops=LOOPS)


# lowest first: the order package/schema.py names the known arches in. On an AVX-512 host
# max_autotune also measures AVX2, where wide vectors may lower the clock.
LEVELS = {
    "sse2": _level("sse2", "x86-64", frozenset(), 16, NR_OTHER, None, ("sse2",)),
    "avx2": _level("avx2", "x86-64-v3", _V3, 32, NR_OTHER, None, ("avx2",)),
    "avx512": _level("avx512", "x86-64-v4", _V4, 64, NR_AVX512, BF16_FEATURE, ("avx512", "avx2")),
}


def native(flags: frozenset[str]) -> Target:
    """-march=native on a CPU with `flags`: the kernels compile for whatever it has, so the
    panel width follows its AVX-512; nothing is checked when such a package loads."""
    wide = "avx512f" in flags
    vector_bytes = 64 if wide else 32 if "avx2" in flags else 16
    return _level("native", "native", frozenset(), vector_bytes, NR_AVX512 if wide else NR_OTHER,
                  BF16_FEATURE, ("native",))


def host_level(flags: frozenset[str]) -> Target:
    """The highest level a CPU with `flags` runs."""
    for isa in ("avx512", "avx2"):
        if LEVELS[isa].features <= flags:
            return LEVELS[isa]
    return LEVELS["sse2"]
