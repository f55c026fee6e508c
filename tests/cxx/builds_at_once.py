"""Builds of generated models at once, on threads of this process sharing its cache."""
from __future__ import annotations

import threading

from aotc.cxx.compiler import build_model
from aotc.target import host_target


def libraries_built_at_once(sources: list[str]) -> list[bytes]:
    """build_model of each of `sources` on a thread of its own, all started together: the
    libraries' bytes, in the order they finished; the first failure raised."""
    libraries, errors = [], []

    def build(text):
        try:
            libraries.append(build_model(text, host_target())[0].read_bytes())
        except Exception as e:  # noqa: BLE001 (raised below)
            errors.append(e)

    threads = [threading.Thread(target=build, args=(text,)) for text in sources]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return libraries
