"""The Ray Serve deployment of one package model: answers the v2 endpoints under
/v2/models/{name}, batches requests along the model's batch dim, counts what it does and
reports its health. Runs the package with the numpy-only runtime (no torch here)."""
from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from ray import serve
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ..errors import AotcError, InputError
from . import batching
from .generation import GenerationService, generates, parse_generate
from .metrics import RayMetrics, ReplicaStats
from .model import ServedModel
from .protocol import HEADER_LENGTH, ProtocolError, encode_infer, error_body, parse_infer


@dataclass(frozen=True)
class PackageSource:
    """Where replicas read the package: a path every node can open, or the package's bytes
    in Ray's object store (so nodes need no shared disk). The reference is held in a list:
    Ray then passes it on as a reference instead of resolving it at construction."""
    path: str | None = None
    ref: tuple | None = None

    @classmethod
    def in_object_store(cls, path: str) -> PackageSource:
        import ray

        with open(path, "rb") as f:
            return cls(ref=(ray.put(f.read()),))

    def read(self) -> str | bytes:
        if self.ref is not None:
            import ray

            return ray.get(self.ref[0])
        assert self.path is not None
        return self.path


def json_response(doc: dict, status: int = 200) -> Response:
    return Response(json.dumps(doc).encode(), status_code=status, media_type="application/json")


def error_response(message: str, status: int) -> Response:
    return Response(error_body(message), status_code=status, media_type="application/json")


def relative_path(request: Request) -> str:
    """The request's path below the application's route prefix ("" for the prefix itself)."""
    path, root = request.url.path, request.scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root):]
    return path.rstrip("/")


class ModelServer:
    """One replica of one model. `max_batch_size` is in rows of the batch dim (capped at
    the dim's max); 1 runs every request alone."""

    def __init__(self, source: PackageSource, model_name: str, version: str = "1",
                 num_threads: int = 1, max_batch_size: int = 1, batch_wait_ms: float = 2.0,
                 max_sequences: int = 4):
        self._load = (source, model_name, version, num_threads, max_sequences)
        self._serve(ServedModel(source.read(), model_name, version, num_threads, max_sequences))
        self.weights: str | None = None  # the .npz whose weights replaced the package's
        self.max_rows = batching.batch_limit(self.served.batch, max_batch_size)
        if self.max_rows:  # the batcher's limits, set per replica (the decorator's are defaults)
            batcher: Any = self._stacked  # serve.batch's wrapper carries the setters
            batcher.set_max_batch_size(self.max_rows)
            batcher.set_batch_wait_timeout_s(batch_wait_ms / 1000)
        # one thread runs the model, so the event loop keeps taking requests (and forming
        # the next batch) while a run is under way
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=f"aotc-{model_name}")
        self.stats = ReplicaStats(model_name, version)
        self.metrics = RayMetrics(model_name)
        self.failure: str | None = None  # the compiled code reported a failure: unhealthy

    # -- Ray Serve hooks and calls through handles
    def check_health(self) -> None:
        """Serve replaces a replica whose compiled code reported a failure."""
        if self.failure is not None:
            raise RuntimeError(f"model '{self.served.name}' failed: {self.failure}")

    def reconfigure(self, config: dict) -> None:
        """Serve's user_config: {"weights": path of an .npz of {constant name: array}} loads
        those weights with load_constants (calls under way finish on the old ones); without
        "weights" the package's own weights come back. `deploy` restarts replicas one by
        one on any change; Serve's config files update a user_config in place."""
        path = config.get("weights")
        if path == self.weights:
            return
        if path is None:  # back to the package's weights: load it afresh
            source, name, version, threads, sequences = self._load
            self._serve(ServedModel(source.read(), name, version, threads, sequences))
        else:
            with np.load(path) as npz:
                update = {k: npz[k] for k in npz.files}
            self.served.model.load_constants(update, check_full_update=False)
        self.weights = path

    def _serve(self, served: ServedModel) -> None:
        self.served = served
        # a decoder LM with its cache as state: the generate extension, a state per request
        sequences = self._load[4]
        self.generation = GenerationService(served.model, served.name, served.version, sequences) \
            if sequences > 0 and generates(served.model.package_metadata,
                                           bool(served.model.buffer_names())) else None

    def ready(self) -> bool:
        return self.failure is None

    def replica_info(self) -> dict:
        """Where this replica runs (its process id and node), whether anything in the
        process imported torch (the serving path needs numpy only), and its statistics."""
        import ray

        return {"pid": os.getpid(), "node_id": ray.get_runtime_context().get_node_id(),
                "torch_imported": "torch" in sys.modules, "statistics": self.stats.document()}

    # -- HTTP: the routes under /v2/models/{name}
    async def __call__(self, request: Request) -> Response:
        path = relative_path(request)
        version_prefix = f"/versions/{self.served.version}"
        if path.startswith("/versions/"):
            if not (path == version_prefix or path.startswith(version_prefix + "/")):
                return error_response(f"model '{self.served.name}' has version "
                                      f"{self.served.version} only", 404)
            path = path[len(version_prefix):]
        if request.method == "POST" and path == "/infer":
            return await self.infer(await request.body(), request.headers.get(HEADER_LENGTH))
        if request.method == "POST" and path in ("/generate", "/generate_stream"):
            return await self.generate(await request.body(), stream=path == "/generate_stream")
        if request.method == "GET" and path == "":
            return json_response(self.served.metadata())
        if request.method == "GET" and path == "/ready":
            return json_response({}) if self.failure is None else error_response(self.failure, 503)
        if request.method == "GET" and path == "/stats":
            return json_response(self.stats.document())
        return error_response(f"no route {request.method} {request.url.path}", 404)

    async def infer(self, body: bytes, header_length: str | None) -> Response:
        start = time.perf_counter()
        try:
            req = parse_infer(body, header_length)
            outputs = await self._execute(self.served.arrays(req.inputs))
            named = [(o["name"], o["dtype"], a) for o, a in zip(self.served.outputs, outputs)]
            if req.outputs is not None:
                by_name = {n: (n, d, a) for n, d, a in named}
                unknown = [n for n in req.outputs if n not in by_name]
                if unknown:
                    raise ProtocolError(f"model '{self.served.name}' has no outputs {unknown}; "
                                        f"its outputs: {list(by_name)}")
                named = [by_name[n] for n in req.outputs]
            content, json_size = encode_infer(self.served.name, self.served.version, req.id,
                                              named, req.binary_outputs)
            response = Response(content, media_type="application/json" if json_size is None
                                else "application/octet-stream")
            if json_size is not None:
                response.headers[HEADER_LENGTH] = str(json_size)
        except InputError as e:  # the request's fault, and the model's own message
            response = error_response(str(e), 400)
        except AotcError as e:  # the compiled code failed: this replica is suspect
            self.failure = str(e)
            response = error_response(str(e), 500)
        seconds = time.perf_counter() - start
        self.stats.answered(response.status_code == 200, seconds)
        self.metrics.answered(response.status_code, seconds)
        return response

    async def generate(self, body: bytes, stream: bool) -> Response:
        """The generate extension: token ids in, token ids out (generation.py)."""
        start = time.perf_counter()
        response: Response
        try:
            if self.generation is None:
                raise ProtocolError(f"model '{self.served.name}' does not generate: it takes no "
                                    "input_ids and cache_position, or holds no cache as state")
            req = parse_generate(body)
            if stream:
                response = StreamingResponse(await self.generation.start_stream(req),
                                             media_type="text/event-stream")
            else:
                response = json_response(await self.generation.generate(req))
        except InputError as e:  # a prompt too long for the cache, a malformed request
            response = error_response(str(e), 400)
        except AotcError as e:
            self.failure = str(e)
            response = error_response(str(e), 500)
        seconds = time.perf_counter() - start
        self.stats.answered(response.status_code == 200, seconds)
        self.metrics.answered(response.status_code, seconds)
        return response

    # -- running the model
    def _record(self, requests: int, rows: int, seconds: float) -> None:
        self.stats.executed(requests, rows, seconds)
        self.metrics.executed(requests, rows, seconds)

    async def _execute(self, arrays: list) -> list:
        batch = self.served.batch
        if self.max_rows and batch is not None and batching.stackable(arrays, batch, self.max_rows):
            outcome = await self._stacked(arrays)
        else:
            loop = asyncio.get_running_loop()
            outcome = await loop.run_in_executor(self._executor, batching.run_alone, arrays,
                                                 self.served.run, self._record)
        return outcome.get()

    @serve.batch(max_batch_size=2, batch_wait_timeout_s=0.002, batch_size_fn=batching.batch_rows)
    async def _stacked(self, requests: list[list]) -> list[batching.Outcome]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, batching.run_batch, requests,
                                          self.served.run, self._record)


class ServerRoutes:
    """The server-wide v2 routes under /v2: server metadata, liveness, readiness (every
    model's replicas answer), and a 404 naming the served models for any other model."""

    def __init__(self, apps: dict[str, str], version: str):
        self.apps, self.version = apps, version  # model name -> its Serve application

    async def __call__(self, request: Request) -> Response:
        path = relative_path(request)
        if request.method == "GET" and path == "":
            return json_response({"name": "aotc", "version": self.version,
                                  "extensions": ["binary_tensor_data", "statistics"]})
        if request.method == "GET" and path == "/health/live":
            return json_response({})
        if request.method == "GET" and path == "/health/ready":
            waiting = await self._not_ready()
            if waiting:
                return error_response(f"models not ready: {waiting}", 503)
            return json_response({})
        if path.startswith("/models/"):
            name = path[len("/models/"):].split("/")[0]
            return error_response(f"model '{name}' is not served here; served models: "
                                  f"{sorted(self.apps)}", 404)
        return error_response(f"no route {request.method} {request.url.path}", 404)

    async def _not_ready(self) -> list[str]:
        waiting = []
        for name, app in self.apps.items():
            try:
                handle = serve.get_app_handle(app)
                ok = await asyncio.wait_for(handle.ready.remote(), timeout=5)
            except Exception:  # a missing application or no replica answering: not ready
                ok = False
            if not ok:
                waiting.append(name)
        return waiting
