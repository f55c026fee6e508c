"""The v2 generate extension of `aotc serve` (serve/generation.py), on a replica's model
server called directly (no cluster): token ids in and out, several requests decoding at once
on states of their own (more waiting in turn), a stream of server-sent events, sampling
with a seed, and typed 400s for requests it cannot serve."""
from __future__ import annotations

import asyncio
import json

import pytest

import aotc
from aotc.runtime.generate import generate
from aotc.serve.deployment import ModelServer, PackageSource
from aotc.serve.generation import parse_generate
from aotc.serve.protocol import ProtocolError
from models import export_tiny_lm

PROMPTS = ([1, 2, 3], [7, 7], [30, 4, 12, 9], [5])


@pytest.fixture(scope="module")
def lm_package(tmp_path_factory):
    return aotc.compile_and_package(export_tiny_lm(),
                                    package_path=tmp_path_factory.mktemp("lm") / "lm.pt2")


def post(server: ModelServer, path: str, doc) -> tuple[int, bytes]:
    """A POST to /v2/models/model{path} answered by the server, and its whole body."""
    body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def call():
        from starlette.requests import Request

        scope = {"type": "http", "method": "POST", "path": f"/v2/models/model{path}",
                 "root_path": "/v2/models/model", "headers": [], "query_string": b""}
        response = await server(Request(scope, receive))
        if hasattr(response, "body_iterator"):
            chunks = [c async for c in response.body_iterator]
            return response.status_code, b"".join(chunks)
        return response.status_code, response.body

    return asyncio.run(call())


def test_generate_answers_each_prompt_as_alone(lm_package):
    alone = aotc.load_package(lm_package)
    want = [generate(alone, p, 6) for p in PROMPTS]
    server = ModelServer(PackageSource(path=str(lm_package)), "model", max_sequences=2)

    async def all_at_once():  # four requests, two slots: two wait their turn
        return await asyncio.gather(*(server.generation.generate(parse_generate(json.dumps(
            {"id": str(k), "input_ids": p, "parameters": {"max_tokens": 6}}).encode()))
            for k, p in enumerate(PROMPTS)))

    answers = asyncio.run(all_at_once())
    assert [a["output_ids"] for a in answers] == want
    assert [a["id"] for a in answers] == ["0", "1", "2", "3"]
    assert all(a["finish_reason"] == "length" and a["model_name"] == "model" for a in answers)
    assert server.served.model.states_in_use == 0
    # through the route, with a stop token: it ends there
    status, body = post(server, "/generate", {"input_ids": PROMPTS[0], "parameters": {
        "max_tokens": 6, "stop_token_ids": [want[0][2]]}})
    assert status == 200, body
    doc = json.loads(body)
    assert doc["output_ids"] == want[0][:want[0].index(want[0][2]) + 1]
    assert doc["finish_reason"] == "stop"


def test_generate_stream_sends_a_token_an_event(lm_package):
    server = ModelServer(PackageSource(path=str(lm_package)), "model", max_sequences=1)
    want = generate(aotc.load_package(lm_package), PROMPTS[2], 5, temperature=0.8, seed=3)
    status, body = post(server, "/generate_stream", {"input_ids": PROMPTS[2], "parameters": {
        "max_tokens": 5, "temperature": 0.8, "seed": 3}})
    assert status == 200
    events = [json.loads(chunk[len("data: "):]) for chunk in body.decode().split("\n\n") if chunk]
    assert [e["output_id"] for e in events] == want  # seeded sampling, reproducible
    assert [e["index"] for e in events] == list(range(5))
    assert events[-1]["finish_reason"] == "length" and "finish_reason" not in events[0]


@pytest.mark.parametrize("doc, message", [
    ({"input_ids": []}, "non-empty list"),
    ({"input_ids": [1, -2]}, "non-empty list"),
    ({"input_ids": [1], "parameters": {"max_tokens": 0}}, "max_tokens"),
    ({"input_ids": [1], "parameters": {"beam": 2}}, "unknown generate parameters"),
    ({"input_ids": [1], "parameters": {"temperature": -1}}, "temperature"),
    (b"not json", "not JSON"),
])
def test_malformed_generate_requests(doc, message):
    with pytest.raises(ProtocolError, match=message):
        parse_generate(doc if isinstance(doc, bytes) else json.dumps(doc).encode())


def test_requests_it_cannot_serve_are_400s(lm_package, readme_package):
    server = ModelServer(PackageSource(path=str(lm_package)), "model")
    for path in ("/generate", "/generate_stream"):  # past the cache: before any event
        status, body = post(server, path, {"input_ids": [1] * 12, "parameters": {"max_tokens": 8}})
        assert status == 400 and b"need a cache of 19 positions" in body
    assert server.served.model.states_in_use == 0
    plain = ModelServer(PackageSource(path=readme_package), "model")
    status, body = post(plain, "/generate", {"input_ids": [1]})
    assert status == 400 and b"does not generate" in body
