"""Targets: what generated code is compiled for, one file per architecture (x86_64.py) and
host.py for this machine. Standard library only: the runtime loads packages with it."""
from __future__ import annotations

import functools

from . import host, x86_64
from .spec import Loops, Target

# One module per architecture, each with ARCHITECTURE, MACHINES, LEVELS (isa name -> Target,
# lowest first), native(cpu flags) and host_level(cpu flags). Level names are unique across
# architectures: the `isa` option names one.
ARCHITECTURES = (x86_64,)


def _host_architecture():
    for module in ARCHITECTURES:
        if host.machine() in module.MACHINES:
            return module
    return None


def native_target() -> Target:
    """-march=native for this machine. One that no architecture file describes builds with
    the kernels' portable paths: x86_64's native level on a CPU without x86 features."""
    module = _host_architecture()
    return (module or x86_64).native(host.cpu_flags() if module else frozenset())


@functools.cache
def host_target() -> Target:
    """The highest level this machine runs."""
    module = _host_architecture()
    return native_target() if module is None else module.host_level(host.cpu_flags())


def target_for(isa: str | None) -> Target:
    """The host's target, or the one named by the `isa` option."""
    if isa in (None, "", "host"):
        return host_target()
    if isa == "native":
        return native_target()
    for module in ARCHITECTURES:
        if isa in module.LEVELS:
            return module.LEVELS[isa]
    names = sorted({name for module in ARCHITECTURES for name in module.LEVELS} | {"native"})
    raise ValueError(f"unknown isa {isa!r}; expected one of {names} or 'host'")


def levels_of(architecture: str) -> dict[str, Target]:
    """The named levels of one architecture, lowest first."""
    return next(module.LEVELS for module in ARCHITECTURES if module.ARCHITECTURE == architecture)


def known_arches() -> tuple[str, ...]:
    """Every arch a package may record: each level's -march value, then "native"."""
    return (*(t.arch for module in ARCHITECTURES for t in module.LEVELS.values()), "native")


def target_of_arch(arch: str) -> Target | None:
    """The target a package recorded as `arch` (None: no architecture file knows it)."""
    if arch == "native":
        return native_target()
    return next((t for module in ARCHITECTURES for t in module.LEVELS.values() if t.arch == arch),
                None)


__all__ = ["ARCHITECTURES", "Loops", "Target", "host", "host_target", "known_arches",
           "levels_of", "native_target", "target_for", "target_of_arch"]
