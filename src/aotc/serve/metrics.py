"""What a replica counts: Ray metrics (requests by status, batch sizes, request latency per
model; Prometheus computes p50/p99 from the histograms) and the same counts kept in the
replica for the v2 statistics extension (`GET /v2/models/{name}/stats`)."""
from __future__ import annotations

import threading
import time

LATENCY_MS_BOUNDS = [0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0,
                     2500.0, 10000.0]
BATCH_BOUNDS = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0]


class ReplicaStats:
    """Counts of one replica, in the shape of Triton's statistics extension: inference_count
    counts rows (each row of a batched request is one inference), execution_count counts
    runs of the model, batch_stats counts runs by their size in rows."""

    def __init__(self, model: str, version: str):
        self.model, self.version = model, version
        self._lock = threading.Lock()
        self.success = [0, 0]  # count, ns
        self.fail = [0, 0]
        self.requests = 0
        self.inference_count = 0
        self.execution_count = 0
        self.batches: dict[int, list[int]] = {}  # rows -> [count, ns]
        self.last_inference_ms = 0

    def executed(self, requests: int, rows: int, seconds: float) -> None:
        ns = int(seconds * 1e9)
        with self._lock:
            self.execution_count += 1
            self.inference_count += rows
            entry = self.batches.setdefault(rows, [0, 0])
            entry[0] += 1
            entry[1] += ns

    def answered(self, ok: bool, seconds: float) -> None:
        with self._lock:
            self.requests += 1
            entry = self.success if ok else self.fail
            entry[0] += 1
            entry[1] += int(seconds * 1e9)
            self.last_inference_ms = int(time.time() * 1000)

    def document(self) -> dict:
        with self._lock:
            return {"model_stats": [{
                "name": self.model, "version": self.version,
                "last_inference": self.last_inference_ms,
                "inference_count": self.inference_count,
                "execution_count": self.execution_count,
                "request_count": self.requests,
                "inference_stats": {"success": {"count": self.success[0], "ns": self.success[1]},
                                    "fail": {"count": self.fail[0], "ns": self.fail[1]}},
                "batch_stats": [{"batch_size": rows, "compute_infer": {"count": c, "ns": ns}}
                                for rows, (c, ns) in sorted(self.batches.items())],
            }]}


class RayMetrics:
    """The replica's Ray metrics, tagged with the model's name (Serve adds the deployment,
    replica and application tags)."""

    def __init__(self, model: str):
        from ray.serve import metrics

        self.tags = {"model": model}  # passed on each call: Serve's histograms refuse defaults
        self.requests = metrics.Counter(
            "aotc_requests", description="inference requests answered, by HTTP status",
            tag_keys=("model", "status"))  # type: ignore[arg-type]  # Ray types it 1-tuple
        self.batch_size = metrics.Histogram(
            "aotc_batch_size", description="rows per run of the model (dynamic batching)",
            boundaries=BATCH_BOUNDS, tag_keys=("model",))
        self.batch_requests = metrics.Histogram(
            "aotc_batch_requests", description="requests per run of the model",
            boundaries=BATCH_BOUNDS, tag_keys=("model",))
        self.latency = metrics.Histogram(
            "aotc_request_latency_ms", description="time in the replica per request, in ms",
            boundaries=LATENCY_MS_BOUNDS, tag_keys=("model",))

    def executed(self, requests: int, rows: int, seconds: float) -> None:
        self.batch_size.observe(rows, tags=self.tags)
        self.batch_requests.observe(requests, tags=self.tags)

    def answered(self, status: int, seconds: float) -> None:
        self.requests.inc(tags={**self.tags, "status": str(status)})
        self.latency.observe(seconds * 1000, tags=self.tags)
