"""Concurrent v2 clients for the serving tests: `tritonclient.http` clients on threads, each
request retried on connection errors and 5xx answers (a replica that dies mid-request),
never on a 4xx (the request's own fault)."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

MAX_ATTEMPTS = 60


def infer(client: httpclient.InferenceServerClient, x: np.ndarray, model: str = "model",
          binary: bool = True) -> np.ndarray:
    tensor = httpclient.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x, binary_data=binary)
    wanted = [httpclient.InferRequestedOutput("sigmoid", binary_data=binary)]
    return client.infer(model, [tensor], outputs=wanted).as_numpy("sigmoid")


def _retryable(e: Exception) -> bool:
    if isinstance(e, InferenceServerException):
        status = e.status()
        return status is None or str(status).startswith("5")
    return isinstance(e, (OSError, ConnectionError, TimeoutError))


@dataclass
class LoadResult:
    answers: list = field(default_factory=list)
    retries: int = 0
    errors: list = field(default_factory=list)


def run_load(url: str, inputs: list[np.ndarray], clients: int = 8, binary: bool = True,
             on_answer=None) -> LoadResult:
    """Send every input once, from `clients` threads, each with its own client; answers come
    back in input order. `on_answer(n)` is called after the n-th answer."""
    result = LoadResult(answers=[None] * len(inputs))
    lock = threading.Lock()
    next_index = iter(range(len(inputs)))
    done = [0]

    def worker():
        client = httpclient.InferenceServerClient(url, connection_timeout=10, network_timeout=60)
        try:
            while True:
                with lock:
                    k = next(next_index, None)
                if k is None:
                    return
                for attempt in range(MAX_ATTEMPTS):
                    try:
                        answer = infer(client, inputs[k], binary=binary)
                        break
                    except Exception as e:  # noqa: BLE001 - sorted into retry or failure below
                        if not _retryable(e) or attempt == MAX_ATTEMPTS - 1:
                            with lock:
                                result.errors.append((k, repr(e)))
                            return
                        with lock:
                            result.retries += 1
                        client.close()  # the connection may be broken: start afresh
                        time.sleep(min(0.05 * (attempt + 1), 1.0))
                        client = httpclient.InferenceServerClient(url, connection_timeout=10,
                                                                  network_timeout=60)
                with lock:
                    result.answers[k] = answer
                    done[0] += 1
                    n = done[0]
                if on_answer is not None:
                    on_answer(n)
        finally:
            client.close()

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return result
