"""Dynamic batching along a model's batch dim: which requests may be stacked, grouping a
batch of requests by their other dims, stacking their rows and splitting the outputs back.
The batch's size (in rows) never passes the dim's max: the batcher counts rows."""
from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ..errors import AotcError
from .model import BatchDim


def batch_limit(batch: BatchDim | None, max_batch_size: int) -> int:
    """The most rows one run may stack: `max_batch_size` capped at the dim's max; 0 when
    requests run alone (no batch dim, or a limit of 1)."""
    if batch is None:
        return 0
    limit = min(max_batch_size, batch.high) if batch.high is not None else max_batch_size
    return limit if limit > 1 else 0


def rows(arrays: list[np.ndarray]) -> int:
    """A stackable request's size along the batch dim (its inputs' common dim 0)."""
    return int(arrays[0].shape[0])


def batch_rows(items: list[list[np.ndarray]]) -> int:
    """The batcher's size of a batch: the rows it holds, not the requests."""
    return sum(rows(a) for a in items)


def stackable(arrays: list[np.ndarray], batch: BatchDim, max_rows: int) -> bool:
    """Whether a request may share a run: every input has a dim 0, all of one size, inside
    the dim's range and the batch limit. Others run alone, so the model's own checks
    answer them with their own errors."""
    if not arrays or any(a.ndim == 0 for a in arrays):
        return False
    n = rows(arrays)
    return (all(a.shape[0] == n for a in arrays) and batch.low <= n <= max_rows
            and (batch.high is None or n <= batch.high))


def _key(arrays: list[np.ndarray]) -> tuple:
    return tuple((a.dtype.str, a.shape[1:]) for a in arrays)


def group(requests: list[list[np.ndarray]]) -> list[list[int]]:
    """Request indices grouped by dtypes and sizes beyond dim 0, in arrival order."""
    groups: dict[tuple, list[int]] = {}
    for k, arrays in enumerate(requests):
        groups.setdefault(_key(arrays), []).append(k)
    return list(groups.values())


class Outcome:
    """One request's result in a batch: its outputs, or the error that its run raised."""

    __slots__ = ("outputs", "error")

    def __init__(self, outputs: list[np.ndarray] | None = None, error: BaseException | None = None):
        self.outputs, self.error = outputs, error

    def get(self) -> list[np.ndarray]:
        if self.error is not None:
            raise self.error
        assert self.outputs is not None
        return self.outputs


def run_batch(requests: list[list[np.ndarray]], run: Callable[[list[np.ndarray]], list[np.ndarray]],
              record: Callable[[int, int, float], None]) -> list[Outcome]:
    """Run each group of requests once, stacked along dim 0; `record(requests, rows,
    seconds)` sees every execution. A group the model refuses runs request by request, so
    each request gets its own answer."""
    out: list[Outcome] = [Outcome() for _ in requests]
    for idx in group(requests):
        sizes = [rows(requests[k]) for k in idx]
        stacked = [np.concatenate(parts) for parts in zip(*(requests[k] for k in idx))] \
            if len(idx) > 1 else requests[idx[0]]
        start = time.perf_counter()
        try:
            outputs = run(stacked)
        except AotcError as e:
            if len(idx) == 1:
                out[idx[0]].error = e
                continue
            for k in idx:
                out[k] = run_alone(requests[k], run, record)
            continue
        record(len(idx), sum(sizes), time.perf_counter() - start)
        bounds = np.cumsum(sizes)[:-1]
        for k, parts in zip(idx, zip(*(np.split(o, bounds) for o in outputs))):
            out[k].outputs = list(parts)
    return out


def run_alone(arrays: list[np.ndarray], run: Callable[[list[np.ndarray]], list[np.ndarray]],
              record: Callable[[int, int, float], None]) -> Outcome:
    start = time.perf_counter()
    try:
        outputs = run(arrays)
    except AotcError as e:
        return Outcome(error=e)
    n = rows(arrays) if arrays and arrays[0].ndim else 1
    record(1, n, time.perf_counter() - start)
    return Outcome(outputs)
