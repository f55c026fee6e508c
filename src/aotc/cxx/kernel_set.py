"""Which shipped kernel sources a translation unit needs.

A model links only the kernel objects whose functions its generated source names (and the
kernels those call), so a first compile on a fresh machine builds just those. EXPORTS is
each source's public names as generated code spells them; tests/cxx/test_kernel_set.py holds
it against the symbols the built objects define. A source missing from EXPORTS is linked
into every model, and the link refuses undefined symbols, so a name left out of this table
fails the build loudly instead of the load.
"""
from __future__ import annotations

import re
from pathlib import Path

_SORT_TYPES = ("b8", "u8", "i8", "i16", "i32", "i64", "f32", "f64")
_LINALG = ("lu_factor", "lu_solve", "cholesky", "triangular_solve", "lu_permutation", "geqrf",
           "householder_product", "ormqr", "eigh")
_LINALG_COMPLEX = ("lu_factor", "lu_solve", "cholesky", "triangular_solve", "lu_permutation",
                   "geqrf", "householder_product", "ormqr", "eigh")

EXPORTS: dict[str, frozenset[str]] = {
    "attention": frozenset({"aotc_attention_f32"}),
    "conv": frozenset({"aotc_sconv", "aotc_sconv_workspace", "aotc_sconv_pack_winograd"}),
    # aotc::fft_c2c ... : aotc_kernels.h's inline wrappers by element type
    "fft": frozenset({f"aotc_fft_{k}_{t}" for k in ("c2c", "r2c", "c2r") for t in ("f32", "f64")}
                     | {f"aotc::fft_{k}" for k in ("c2c", "r2c", "c2r")}),
    "gemm": frozenset({"aotc_sgemm", "aotc_sgemm_act", "aotc_sgemm_batched",
                       "aotc_sgemm_fused", "aotc_sgemm_pack_b", "aotc_sgemm_packed_floats",
                       "aotc_sgemm_packed_layout", "aotc_sgemm_prepacked",
                       "aotc_sgemm_prepacked_act"}),
    "gemm_bf16": frozenset({"aotc_sgemm_pack_b_bf16", "aotc_sgemm_packed_bf16_elems",
                            "aotc_sgemm_prepacked_bf16"}),
    "gemm_int8": frozenset({"aotc_qconv_pack_b", "aotc_qconv_pack_b_rows", "aotc_qconv_s32",
                            "aotc_qgemm_pack_b",
                            "aotc_qgemm_packed_bytes", "aotc_qgemm_s32"}),
    "gemm_w4": frozenset({"aotc_gemm_w4_f32", "aotc_wo_pack_int4"}),
    "gemm_wo": frozenset({"aotc_gemm_wo_f32"}),
    # aotc::scan / aotc::scan_positions: aotc_kernels.h's inline wrappers over the scans
    # aotc::lu_factor ... : aotc_kernels.h's inline wrappers by element type
    "linalg": frozenset({f"aotc_{fn}_{t}" for fn in _LINALG for t in ("f32", "f64")}
                        | {f"aotc_{fn}_{t}" for fn in _LINALG_COMPLEX for t in ("c64", "c128")}
                        | {f"aotc::{fn}" for fn in _LINALG}),
    "linalg_expm": frozenset({f"aotc_matrix_exp_{t}" for t in ("f32", "f64", "c64", "c128")}
                             | {"aotc::matrix_exp"}),
    "linalg_ldl": frozenset({f"aotc_{fn}_{t}" for fn in ("ldl_factor", "ldl_solve")
                             for t in ("f32", "f64", "c64", "c128")}
                            | {"aotc::ldl_factor", "aotc::ldl_solve"}),
    "linalg_eig": frozenset({f"aotc_eig_{t}" for t in ("f32", "f64", "c64", "c128")}
                            | {"aotc::eig"}),
    "linalg_svd": frozenset({f"aotc_svd_{t}" for t in ("f32", "f64", "c64", "c128")}
                            | {"aotc::svd"}),
    "scan": frozenset({"aotc_scan_f32", "aotc_scan_f64", "aotc_scan_i64", "aotc_scan_index_f32",
                       "aotc_scan_index_f64", "aotc_scan_index_i64", "aotc::scan",
                       "aotc::scan_positions"}),
    "sort": frozenset({f"aotc_{fn}_{t}" for fn in ("argsort", "searchsorted")
                       for t in _SORT_TYPES}),
}

# the Python runtime checks a package's weights with the library's aotc_crc32
ALWAYS = frozenset({"checksum"})

_NAME = re.compile(r"\baotc(?:_|::)[A-Za-z0-9_]+")
_LOCAL_INCLUDE = re.compile(r'#include\s+"([^"]+)"')


def names_in(text: str) -> set[str]:
    """The aotc_* (and aotc::*) identifiers a source text mentions."""
    return set(_NAME.findall(text))


def _own_text(src: Path) -> str:
    """A kernel source with the kernel-private headers it includes (aotc_kernels.h, which
    declares every kernel, excepted)."""
    parts = [src.read_text()]
    for name in _LOCAL_INCLUDE.findall(parts[0]):
        header = src.parent / name
        if header.suffix == ".h" and header.name != "aotc_kernels.h" and header.exists():
            parts.append(header.read_text())
    return "\n".join(parts)


def needed_sources(model_source: str, sources: list[Path]) -> list[Path]:
    """The kernel sources a model's generated source needs, callees included, in the order
    of `sources`."""
    by_stem = {s.stem: s for s in sources}
    need = {stem for stem in by_stem if stem in ALWAYS or stem not in EXPORTS}
    pending = [model_source]
    while pending:
        mentioned = names_in(pending.pop())
        for stem, exported in EXPORTS.items():
            if stem in by_stem and stem not in need and mentioned & exported:
                need.add(stem)
                pending.append(_own_text(by_stem[stem]))
    return [s for s in sources if s.stem in need]
