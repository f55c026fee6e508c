"""The `precision` compile option. "fp32" (the default) computes every GEMM in float32.
"bf16" stores each prepacked GEMM weight (scheduler/prepack.py) rounded to bfloat16, in the
layout of kernels/aotc_kernels.h (aotc_sgemm_pack_b_bf16: panels whose K rows come in
interleaved pairs), and runs those GEMMs on kernels/gemm_bf16.cpp: A rounded to bfloat16 as
it is packed, products summed in float32 by vdpbf16ps, bias and epilogue in float32. Other
GEMMs, convolutions and everything else stay float32.

vdpbf16ps needs the avx512_bf16 CPU feature (the target's bf16_feature). aotc refuses "bf16"
at compile time for a target that cannot have it (isa avx2 or sse2, a host or `native` build
on a CPU without it, or aarch64, which has no bf16 kernel): there is no float32 emulation. A
package built for isa avx512 records the feature (target.features) and the precision
(target.precision); both loaders refuse it on a CPU that lacks the feature."""
from __future__ import annotations

import numpy as np

from ..errors import CompileError
from ..ir.nodes import PackedGemmB
from ..target import Target, architectures, host, levels_of


def check_precision(precision: str, target: Target, on_host: bool) -> None:
    """Raise CompileError when `target` cannot run `precision`; `on_host`: this machine picked
    the target (neither the target nor the isa option named it)."""
    if precision != "bf16":
        return
    on_host = on_host or target.arch == "native"
    feature = target.bf16_feature
    capable = [t for t in levels_of(target.architecture).values() if t.bf16_feature]
    if not capable:
        where = sorted(f"{t.architecture}'s {t.bf16_feature}" for arch in architectures()
                       for t in levels_of(arch).values() if t.bf16_feature and t.isa != "native")
        raise CompileError(f"precision='bf16' has no {target.architecture} kernel (bf16 GEMMs run "
                           f"on {' or '.join(sorted(set(where)))} only); compile with "
                           "precision='fp32'")
    if feature is None or (on_host and feature not in host.cpu_flags()):
        named = feature or capable[0].bf16_feature
        machine = ("this CPU" if on_host else f"isa {target.isa!r} ({target.arch})")
        other = f", or with isa={capable[0].isa!r} for a CPU that has it"
        raise CompileError(f"precision='bf16' needs the {named} CPU feature, which {machine} does "
                           f"not have; compile with precision='fp32'{other}")


def target_metadata(precision: str, target: Target) -> dict[str, str]:
    """What a package records in its target about the precision (nothing for fp32)."""
    if precision != "bf16":
        return {}
    assert target.bf16_feature is not None  # check_precision refused the other targets
    return {"precision": "bf16", "features": target.bf16_feature}


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (uint16), rounded to nearest even; a NaN stays a
    quiet NaN (the rounding of the kernel's to_bf16)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, (u >> 16) | 0x40, rounded).astype(np.uint16)


def pack_panels_bf16(data: np.ndarray, packing: PackedGemmB) -> np.ndarray:
    """The bfloat16 layout of B [K, N] (the bytes aotc_sgemm_pack_b_bf16 writes), read from
    the flat constant `data` at the packing's offset and strides."""
    k, n, nr, kc = packing.k, packing.n, packing.nr, packing.kc
    flat = np.ascontiguousarray(data, dtype=np.float32).reshape(-1)
    item = flat.itemsize
    b = np.lib.stride_tricks.as_strided(flat[packing.offset:], shape=(k, n),
                                        strides=(packing.sb_k * item, packing.sb_n * item))
    npad = -(-n // nr) * nr
    kcb = -(-k // -(-k // kc))
    kcb += kcb % 2
    padded = np.zeros((k + k % 2, npad), np.uint16)
    padded[:k, :n] = to_bf16_bits(b)
    out = np.empty((k + k % 2) * npad, np.uint16)
    for pc in range(0, k, kcb):
        rows = min(kcb, k - pc)
        rows += rows % 2
        # [rows/2, 2, panels, nr] -> [panels, rows/2, nr, 2]
        block = padded[pc:pc + rows].reshape(rows // 2, 2, npad // nr, nr)
        out[pc * npad:(pc + rows) * npad] = block.transpose(2, 0, 3, 1).reshape(-1)
    return out
