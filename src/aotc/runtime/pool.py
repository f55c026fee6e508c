"""A bounded pool of model objects (runners): each has its own arena and call frame, and
serves one call at a time. Callers beyond the pool's size wait for a free runner instead
of adding another OpenMP team to an already busy machine."""
from __future__ import annotations

import threading
from collections.abc import Callable


class RunnerPool:
    """Up to `size` runners: the first given, the others made by `acquire`'s `create()` when
    every runner is busy. The pool holds no reference to its owner (no cycle to collect)."""

    def __init__(self, size: int, first: int):
        self.size = size
        self._free: list[int] = [first]
        self._all: list[int] = [first]
        self._ready = threading.Condition(threading.Lock())

    def acquire(self, create: Callable[[], int]) -> int:
        with self._ready:
            while not self._free and len(self._all) >= self.size:
                self._ready.wait()
            if self._free:
                return self._free.pop()
            self._all.append(-1)  # reserve the place while the runner is made unlocked
        try:
            runner = create()
        except BaseException:
            with self._ready:
                self._all.remove(-1)
                self._ready.notify()
            raise
        with self._ready:
            self._all[self._all.index(-1)] = runner
        return runner

    def release(self, runner: int) -> None:
        with self._ready:
            self._free.append(runner)
            self._ready.notify()

    def first(self) -> int:
        """The runner that a caller who promised one thread at a time uses, with no lock."""
        return self._all[0]

    def close(self, destroy: Callable[[int], None]) -> None:
        with self._ready:
            runners, self._all, self._free = [r for r in self._all if r != -1], [], []
        for r in runners:
            destroy(r)

    def __len__(self) -> int:
        return len(self._all)
