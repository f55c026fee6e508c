"""How long the OpenMP workers of a model library spin after a parallel region.

libgomp's workers spin GOMP_SPINCOUNT times (300000 unless told, a few milliseconds) before
they sleep, so after a call they hold the cores the caller's next work (numpy's BLAS, another
runtime) wants. The runtime asks for a short spin instead, long enough to bridge the gaps
between the kernels of one call and short enough to free the cores soon after it returns
(benchmarks/wait_policy.py measures the choice). libgomp reads its environment once, when it
is loaded, so the variable is set only around the first load of libgomp by a model library,
and not at all when the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT (theirs wins) or when
libgomp is already loaded (by torch, for instance: the process keeps the settings it has).
The C++ runtime (runtime_cpp/library.cpp) does the same with the same value.
"""
from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

SPIN_COUNT = "1000"
USER_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def libgomp_loaded() -> bool:
    """Whether this process has loaded libgomp already (by its soname, whatever the path)."""
    try:
        ctypes.CDLL("libgomp.so.1", mode=getattr(os, "RTLD_NOLOAD", 4) | ctypes.RTLD_LOCAL)
    except OSError:
        return False
    return True


@contextmanager
def spin_setting(loaded: Callable[[], bool] = libgomp_loaded) -> Iterator[bool]:
    """Around the load of a model library: GOMP_SPINCOUNT is SPIN_COUNT in the environment
    (and so for a libgomp loaded meanwhile) unless the user chose a wait policy or libgomp is
    loaded; afterwards the environment is as before. Yields whether it set the variable."""
    if any(v in os.environ for v in USER_VARIABLES) or loaded():
        yield False
        return
    os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
    try:
        yield True
    finally:
        os.environ.pop("GOMP_SPINCOUNT", None)
