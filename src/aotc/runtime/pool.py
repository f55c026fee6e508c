"""A bounded pool of model objects (runners): each has its own arena and call frame, and
serves one call at a time. Callers beyond the pool's size wait for a free runner instead
of adding another OpenMP team to an already busy machine.

Runners belong to a weights generation (the constants they were created with). A weight
swap starts a new generation: free runners of older ones are retired at once, busy ones
when their call releases them, so calls in flight finish on the weights they started with.
"""
from __future__ import annotations

import threading
from collections.abc import Callable

Create = Callable[[object], int]  # generation -> a new runner made with its weights
Destroy = Callable[[int], None]


class RunnerPool:
    """Up to `size` runners: the first given, the others made by `acquire`'s `create()` when
    every runner is busy. The pool holds no reference to its owner (no cycle to collect);
    it keeps each runner's generation object alive while the runner lives."""

    def __init__(self, size: int, first: int, generation: object):
        self.size = size
        self._generation = generation
        self._free: list[int] = [first]
        self._all: list[int] = [first]
        self._generation_of: dict[int, object] = {first: generation}
        self._lock = threading.Lock()  # taken directly on the hot path (the Condition's)
        self._ready = threading.Condition(self._lock)
        self._waiting = 0  # callers blocked in acquire: a release wakes one only if any

    @property
    def generation(self) -> object:
        return self._generation

    def acquire(self, create: Create, destroy: Destroy) -> int:
        with self._lock:  # the usual case: a free runner of the current weights
            if self._free and self._generation_of[self._free[-1]] is self._generation:
                return self._free.pop()
        return self._acquire_waiting(create, destroy)

    def _acquire_waiting(self, create: Create, destroy: Destroy) -> int:
        stale: list[int] = []
        try:
            with self._ready:
                while True:
                    while self._free:
                        runner = self._free.pop()
                        if self._generation_of[runner] is self._generation:
                            return runner
                        stale.append(self._forget(runner))
                    if len(self._all) < self.size:
                        break
                    self._waiting += 1
                    try:
                        self._ready.wait()
                    finally:
                        self._waiting -= 1
                self._all.append(-1)  # reserve the place while the runner is made unlocked
                generation = self._generation
        finally:
            for r in stale:
                destroy(r)
        try:
            runner = create(generation)
        except BaseException:
            with self._ready:
                self._all.remove(-1)
                self._ready.notify()
            raise
        with self._ready:
            self._all[self._all.index(-1)] = runner
            self._generation_of[runner] = generation
        return runner

    def release(self, runner: int, destroy: Destroy) -> None:
        with self._lock:
            current = self._generation_of.get(runner) is self._generation
            if current:
                self._free.append(runner)
            else:
                self._forget(runner)
            if self._waiting:
                self._ready.notify()
        if not current:
            destroy(runner)

    def advance(self, generation: object, destroy: Destroy) -> None:
        """Start a new weights generation; free runners of older ones are retired now."""
        with self._ready:
            self._generation = generation
            stale = [r for r in self._free if self._generation_of[r] is not generation]
            self._free = [r for r in self._free if r not in stale]
            for r in stale:
                self._forget(r)
            self._ready.notify_all()
        for r in stale:
            destroy(r)

    def _forget(self, runner: int) -> int:
        self._all.remove(runner)
        del self._generation_of[runner]
        return runner

    def first(self) -> int:
        """The runner that a caller who promised one thread at a time uses, with no lock."""
        return self._all[0]

    def replace_first(self, runner: int, generation: object) -> int:
        """For the single-threaded mode: the new generation's runner becomes the first; the
        old one is returned for the caller to destroy."""
        with self._ready:
            old = self._all[0]
            self._all[0] = runner
            self._free = [runner if r == old else r for r in self._free]
            del self._generation_of[old]
            self._generation_of[runner] = self._generation = generation
        return old

    def close(self, destroy: Destroy) -> None:
        with self._ready:
            runners, self._all, self._free = [r for r in self._all if r != -1], [], []
            self._generation_of = {}
        for r in runners:
            destroy(r)

    def __len__(self) -> int:
        return len(self._all)
