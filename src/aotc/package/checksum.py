"""The load-time integrity check of a package's large entries: CRC-32 (zlib's polynomial)
of each CHUNK_BYTES-long chunk, recorded in metadata.json as one hex string of 8 digits per
chunk. Chunks are verified on several threads (zlib releases the GIL), and a mismatch names
the damaged byte range. The sha256 digests stay in the package for full verification
(`aotc inspect --verify`); they are not computed on the load path.
"""
from __future__ import annotations

import os
import threading
import zlib

CHUNK_BYTES = 4 << 20
_PARALLEL_BYTES = 8 << 20  # below this one thread is faster than starting others
_MAX_THREADS = 4


def chunk_count(size: int, chunk_bytes: int) -> int:
    """Chunks covering `size` bytes (an empty entry has one, of zero bytes)."""
    return max(1, -(-size // chunk_bytes))


def chunk_crcs(data, chunk_bytes: int = CHUNK_BYTES) -> str:
    """The hex string recorded for `data` (bytes or any buffer)."""
    view = memoryview(data).cast("B")
    return "".join(f"{zlib.crc32(view[k * chunk_bytes:(k + 1) * chunk_bytes]):08x}"
                   for k in range(chunk_count(len(view), chunk_bytes)))


def _threads(size: int, chunks: int) -> int:
    if size < _PARALLEL_BYTES:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, chunks, _MAX_THREADS))


def first_bad_chunk(data, expected: str, chunk_bytes: int, crc32=zlib.crc32) -> int | None:
    """The index of the first chunk of `data` whose CRC-32 differs from `expected` (None
    when all match). The caller has checked that `expected` holds one value per chunk.
    `crc32(buffer) -> int` computes one chunk's (zlib's, or a model library's
    aotc_crc32: either must release the GIL for the threads to help)."""
    view = memoryview(data).cast("B")
    n = len(expected) // 8
    bad: list[int] = []

    def check(first: int, step: int) -> None:
        for k in range(first, n, step):
            crc = crc32(view[k * chunk_bytes:(k + 1) * chunk_bytes])
            if crc != int(expected[8 * k:8 * k + 8], 16):
                bad.append(k)  # list.append is atomic
                return

    threads = _threads(len(view), n)
    workers = [threading.Thread(target=check, args=(t, threads)) for t in range(1, threads)]
    for w in workers:
        w.start()
    check(0, threads)
    for w in workers:
        w.join()
    return min(bad) if bad else None
