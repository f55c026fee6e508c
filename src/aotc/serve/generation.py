"""Generation over the v2 protocol's generate extension, token ids in and out (the client
tokenizes): `POST /v2/models/{name}/generate` answers with every new token,
`/generate_stream` with one server-sent event per token as it is decoded. A package serves
generation when it takes `input_ids` and `cache_position` and holds its cache as state
(transformers' TorchExportableModuleForDecoderOnlyLM export path).

Each request decodes on a state of its own (CompiledModel.new_state), at most
`max_sequences` at once, each on its own runner and thread; requests beyond wait in turn.
Request body:

    {"id": "...", "input_ids": [1, 5, 9],
     "parameters": {"max_tokens": 16, "temperature": 0.0, "top_k": 40, "seed": 7,
                    "stop_token_ids": [2]}}

Answer: {"model_name", "model_version", "id", "output_ids": [...], "finish_reason": "stop"
or "length"}; a stream's events carry {"model_name", "model_version", "id", "index",
"output_id"} and the last one "finish_reason" too.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..runtime.generate import generate_steps
from .protocol import ProtocolError

_PARAMETERS = {"max_tokens", "temperature", "top_k", "seed", "stop_token_ids"}


def generates(meta: dict, stateful: bool) -> bool:
    """Whether a package's model serves generation."""
    names = {i["name"] for i in meta["inputs"]}
    return stateful and {"input_ids", "cache_position"} <= names


@dataclass(frozen=True)
class GenerateRequest:
    id: str | None
    input_ids: list[int]
    max_tokens: int
    temperature: float
    top_k: int | None
    seed: int | None
    stop_token_ids: tuple[int, ...]


def parse_generate(body: bytes) -> GenerateRequest:
    """A generate request's JSON body, every field checked."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise ProtocolError(f"the request body is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise ProtocolError("a generate request is a JSON object")
    ids = doc.get("input_ids")
    if not isinstance(ids, list) or not ids or not all(
            isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in ids):
        raise ProtocolError("'input_ids' must be a non-empty list of token ids (integers >= 0)")
    params = doc.get("parameters", {})
    if not isinstance(params, dict):
        raise ProtocolError("'parameters' must be an object")
    unknown = sorted(set(params) - _PARAMETERS)
    if unknown:
        raise ProtocolError(f"unknown generate parameters {unknown}; known: {sorted(_PARAMETERS)}")
    max_tokens = params.get("max_tokens", 16)
    temperature = params.get("temperature", 0.0)
    top_k, seed = params.get("top_k"), params.get("seed")
    stops = params.get("stop_token_ids", [])
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise ProtocolError(f"'max_tokens' must be a positive integer, got {max_tokens!r}")
    if not isinstance(temperature, (int, float)) or isinstance(temperature, bool) or temperature < 0:
        raise ProtocolError(f"'temperature' must be a number >= 0, got {temperature!r}")
    for name, value in (("top_k", top_k), ("seed", seed)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise ProtocolError(f"'{name}' must be an integer >= 0, got {value!r}")
    if not isinstance(stops, list) or not all(isinstance(t, int) for t in stops):
        raise ProtocolError("'stop_token_ids' must be a list of token ids")
    request_id = doc.get("id")
    return GenerateRequest(None if request_id is None else str(request_id), ids, max_tokens,
                           float(temperature), top_k, seed, tuple(stops))


class GenerationService:
    """Generation on one loaded model: a state and a thread per request decoding, at most
    `max_sequences` at once (the model must be loaded with as many runners and states)."""

    def __init__(self, model, name: str, version: str, max_sequences: int):
        self.model, self.name, self.version = model, name, version
        self._slots = asyncio.Semaphore(max_sequences)
        self._executor = ThreadPoolExecutor(max_sequences, thread_name_prefix=f"aotc-gen-{name}")

    def _head(self, req: GenerateRequest) -> dict:
        head = {"model_name": self.name, "model_version": self.version}
        if req.id is not None:
            head["id"] = req.id
        return head

    async def _tokens(self, req: GenerateRequest) -> AsyncIterator[int]:
        """The request's tokens as they are decoded, on a state of its own."""
        loop = asyncio.get_running_loop()
        async with self._slots:  # a free sequence slot: waits in turn when none is
            state = await loop.run_in_executor(self._executor, self.model.new_state)
            try:
                steps = await loop.run_in_executor(self._executor, lambda: generate_steps(
                    self.model, req.input_ids, req.max_tokens, eos_token_id=list(req.stop_token_ids),
                    temperature=req.temperature, top_k=req.top_k, seed=req.seed, state=state,
                    reset=False))
                done = object()
                while True:
                    token = await loop.run_in_executor(self._executor, next, steps, done)
                    if token is done:
                        return
                    yield token
            finally:
                state.free()

    def finish_reason(self, req: GenerateRequest, tokens: list[int]) -> str:
        return "stop" if tokens and tokens[-1] in req.stop_token_ids else "length"

    async def generate(self, req: GenerateRequest) -> dict:
        tokens = [t async for t in self._tokens(req)]
        return {**self._head(req), "output_ids": tokens,
                "finish_reason": self.finish_reason(req, tokens)}

    async def start_stream(self, req: GenerateRequest) -> AsyncIterator[bytes]:
        """Server-sent events, one per token, the last with its finish reason. The first
        token is decoded before this returns, so that a bad request (a prompt too long for
        the cache) fails as an HTTP error, not in the middle of a stream."""
        it = self._tokens(req)
        first = await anext(it)

        async def events() -> AsyncIterator[bytes]:
            tokens = [first]
            async for token in it:
                yield _event({**self._head(req), "index": len(tokens) - 1,
                              "output_id": tokens[-1]})
                tokens.append(token)
            yield _event({**self._head(req), "index": len(tokens) - 1, "output_id": tokens[-1],
                          "finish_reason": self.finish_reason(req, tokens)})

        return events()


def _event(doc: dict) -> bytes:
    return f"data: {json.dumps(doc)}\n\n".encode()
