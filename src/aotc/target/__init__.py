"""Targets: what generated code is compiled for, one file per architecture (x86_64.py,
aarch64.py) and host.py for this machine. Standard library only: the runtime loads packages with it."""
from __future__ import annotations

import functools

from . import aarch64, host, x86_64
from .spec import Loops, Target

# One module per architecture, each with ARCHITECTURE, MACHINES, LEVELS (isa name -> Target,
# lowest first), native(cpu flags) and host_level(cpu flags). Level names are unique across
# architectures: the `isa` option names one.
ARCHITECTURES = (x86_64, aarch64)


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
    names = sorted(_level_names() | {"native"})
    raise ValueError(f"unknown isa {isa!r}; expected one of {names} or 'host'")


def select_target(target: str | None, isa: str | None) -> Target:
    """The target the `target` and `isa` options name together. `target` "host" (or None)
    leaves it to `isa` (target_for); an architecture ("aarch64", or a name platform.machine()
    gives its processors) means its baseline, which each of its processors runs, or the level
    of it that `isa` names; a level's name means that level."""
    if target in (None, "", "host"):
        return target_for(isa)
    module = next((m for m in ARCHITECTURES if target == m.ARCHITECTURE or target in m.MACHINES),
                  None)
    chosen = isa not in (None, "", "host")
    if module is None:
        level = next((m.LEVELS[target] for m in ARCHITECTURES if target in m.LEVELS), None)
        if level is None:
            names = sorted(m.ARCHITECTURE for m in ARCHITECTURES)
            raise ValueError(f"unknown target {target!r}; expected 'host', an architecture "
                             f"({', '.join(names)}) or one of its levels "
                             f"({', '.join(sorted(_level_names()))})")
        if chosen and isa != target:
            raise ValueError(f"target {target!r} and isa {isa!r} name different levels; give one")
        return level
    if not chosen:
        return next(iter(module.LEVELS.values()))
    if isa == "native":
        if module is not _host_architecture():
            raise ValueError(f"isa 'native' builds for this machine's CPU ({host.machine()}), "
                             f"not for {module.ARCHITECTURE}; name one of its levels "
                             f"{sorted(module.LEVELS)}")
        return native_target()
    if isa not in module.LEVELS:
        raise ValueError(f"isa {isa!r} is not a level of target {module.ARCHITECTURE!r}; its "
                         f"levels are {sorted(module.LEVELS)}")
    return module.LEVELS[isa]


def _level_names() -> set[str]:
    return {name for module in ARCHITECTURES for name in module.LEVELS}


def architectures() -> tuple[str, ...]:
    """Every processor family a package may record."""
    return tuple(module.ARCHITECTURE for module in ARCHITECTURES)


def machines_of(architecture: str) -> frozenset[str]:
    """What platform.machine() says on a processor of the family."""
    return next(module.MACHINES for module in ARCHITECTURES if module.ARCHITECTURE == architecture)


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


__all__ = ["ARCHITECTURES", "Loops", "Target", "architectures", "host", "host_target",
           "known_arches", "levels_of", "machines_of", "native_target", "select_target",
           "target_for", "target_of_arch"]
