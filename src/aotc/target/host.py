"""This machine: its processor family, its CPU features, whether it runs code built for a
target, and the folder where builds and extracted libraries are cached."""
from __future__ import annotations

import functools
import os
import platform
from pathlib import Path

from .spec import Target


def machine() -> str:
    return platform.machine()


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU features /proc/cpuinfo lists (empty where it cannot be read): its "flags" on
    x86, its "Features" on Arm."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def missing_features(target: Target) -> set[str]:
    """What code for `target` needs and this machine lacks (empty: it can run)."""
    if target.arch == "native":  # built on and for the machine that compiled it
        return set()
    if machine() not in target.machines:
        return {f"an {target.architecture} processor (this is {machine()})"}
    return set(target.features) - set(cpu_flags())


def has_int8_dot_products(target: Target) -> bool:
    """Whether this machine runs `target` with the int8 GEMM's dot-product instructions (the
    `int8_kernels` option's "auto")."""
    return machine() in target.machines and bool(target.int8_dot_features & cpu_flags())


def has_bf16_dot_products(target: Target) -> bool:
    """Whether this machine runs `target`'s bfloat16 GEMM kernel (vdpbf16ps): the level has
    one and the CPU has its feature. A half model's bfloat16 weights take that kernel then
    (scheduler/prepack.py), and the package records the feature."""
    return (machine() in target.machines and target.bf16_feature is not None
            and target.bf16_feature in cpu_flags())


def cache_dir() -> Path:
    """Where builds and extracted libraries live (callers create their sub-folders)."""
    root = os.environ.get("AOTC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "aotc")
    return Path(root)
