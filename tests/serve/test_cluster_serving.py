"""The README's model served by `aotc serve` with 2 replicas on a two-node Ray cluster on
127.0.0.1: v2 metadata and health, bad requests, 1,000 requests from 8 concurrent
tritonclient clients, dynamic batching under load, and a replica killed mid-run."""
from __future__ import annotations

import http.client
import json
import os
import signal
import threading
import time

import numpy as np
import pytest
import tritonclient.http as httpclient
from ray import serve  # the serve extra: without it this module fails, it is never skipped
from tritonclient.utils import InferenceServerException
from v2_load import infer, run_load

import aotc

APP = "aotc-model"


def _direct(package: str):
    return aotc.load_package(package)


def _replicas(served, want: int, timeout: float = 120, exclude: set[int] = frozenset()) -> dict:
    """{pid: replica_info} of `want` running replicas (none of `exclude`), asking through a
    handle until each has answered."""
    deadline = time.monotonic() + timeout
    infos: dict[int, dict] = {}
    handle = serve.get_app_handle(APP)
    while time.monotonic() < deadline:
        try:
            info = handle.replica_info.remote().result(timeout_s=30)
        except Exception:  # noqa: BLE001 - a replica going away while asked: ask again
            time.sleep(0.5)
            continue
        if info["pid"] not in exclude:
            infos[info["pid"]] = info
        if len(infos) >= want:
            return infos
    raise AssertionError(f"only {len(infos)} of {want} replicas answered: {infos}")


def _post(url: str, path: str, body: bytes, headers: dict | None = None) -> tuple[int, dict]:
    host, port = url.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        conn.request("POST", path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_metadata_and_health(served):
    client = httpclient.InferenceServerClient(served.url)
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("model")
    meta = client.get_model_metadata("model")
    assert meta["name"] == "model"
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 10]}]
    assert meta["outputs"] == [{"name": "sigmoid", "datatype": "FP32", "shape": [-1, 1]}]
    with pytest.raises(InferenceServerException, match="served models: \\['model'\\]"):
        client.get_model_metadata("other")
    client.close()


def test_replicas_on_both_nodes_without_torch(served):
    with served.driver():
        infos = _replicas(served, 2)
    assert len({i["node_id"] for i in infos.values()}) == 2  # one replica per 1-CPU node
    assert not any(i["torch_imported"] for i in infos.values())


def test_bad_requests_get_400_with_the_input_error(served):
    model = _direct(served.package)
    client = httpclient.InferenceServerClient(served.url)
    for bad in (np.zeros((2, 11), np.float32), np.zeros((1025, 10), np.float32),
                np.zeros((2, 10, 1), np.float32)):
        with pytest.raises(aotc.InputError) as direct:
            model(bad)
        with pytest.raises(InferenceServerException) as answer:
            infer(client, bad)
        assert answer.value.status() == "400"
        assert answer.value.message() == str(direct.value)
    wrong_dtype = httpclient.InferInput("x", [2, 10], "FP64")
    wrong_dtype.set_data_from_numpy(np.zeros((2, 10), np.float64))
    with pytest.raises(InferenceServerException, match="datatype FP64, but model 'model' takes FP32"):
        client.infer("model", [wrong_dtype])
    client.close()
    x = [[0.5] * 10]
    cases = {  # body -> the message's start
        b"{not json": "the request is not valid JSON",
        json.dumps({"inputs": []}).encode(): "model 'model' takes inputs ['x']",
        json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 10], "data": x},
                               {"name": "y", "datatype": "FP32", "shape": [1, 10], "data": x}]}
                   ).encode(): "model 'model' takes inputs ['x']",
        json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 9], "data": x}]}
                   ).encode(): "input 'x': shape [1, 9] holds 9 elements",
    }
    for body, message in cases.items():
        status, doc = _post(served.url, "/v2/models/model/infer", body)
        assert status == 400 and doc["error"].startswith(message), (body, doc)
    # JSON tensors work as well as binary ones, and the replicas survived all of the above
    ok = np.random.default_rng(1).standard_normal((3, 10)).astype(np.float32)
    client = httpclient.InferenceServerClient(served.url)
    np.testing.assert_array_equal(infer(client, ok, binary=False), model(ok))
    client.close()


def test_thousand_requests_from_eight_clients(served):
    model = _direct(served.package)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((int(rng.integers(1, 5)), 10)).astype(np.float32)
              for _ in range(1000)]
    result = run_load(served.url, inputs, clients=8)
    assert not result.errors
    for x, y in zip(inputs, result.answers):
        np.testing.assert_array_equal(y, model(x))


def test_batching_under_load(served):
    """8 clients sending one row each: the replicas run more than one request per execution
    on average, and every answer is still the direct run's."""
    model = _direct(served.package)
    with served.driver():
        before = _replicas(served, 2)
        rng = np.random.default_rng(2)
        inputs = [rng.standard_normal((1, 10)).astype(np.float32) for _ in range(400)]
        result = run_load(served.url, inputs, clients=8)
        after = _replicas(served, 2)
    assert not result.errors
    for x, y in zip(inputs, result.answers):
        np.testing.assert_array_equal(y, model(x))
    assert set(after) == set(before)

    def totals(infos, key):
        return sum(i["statistics"]["model_stats"][0][key] for i in infos.values())

    rows = totals(after, "inference_count") - totals(before, "inference_count")
    runs = totals(after, "execution_count") - totals(before, "execution_count")
    assert rows == len(inputs)  # one row per request
    assert rows / runs > 1, f"{rows} requests in {runs} runs: no batching"
    # since the replicas started (the 1,000 requests of 1-4 rows too): never past the limit
    sizes = {b["batch_size"] for i in after.values()
             for b in i["statistics"]["model_stats"][0]["batch_stats"]}
    assert max(sizes) <= served.max_batch, sizes
    print(f"mean batch: {rows / runs:.2f} requests per run; run sizes seen: {sorted(sizes)}")


def test_ray_metrics_per_model(served):
    """Requests, batch sizes and latency reach Ray's Prometheus endpoints, tagged with the
    model (Ray exports them every few seconds: wait for them, bounded)."""
    import urllib.request

    wanted = ["ray_aotc_requests", "ray_aotc_batch_size_bucket", "ray_aotc_batch_requests_bucket",
              "ray_aotc_request_latency_ms_bucket"]
    deadline, seen = time.monotonic() + 90, set()
    while time.monotonic() < deadline and len(seen) < len(wanted):
        for port in served.cluster.metrics_ports:
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
            except OSError:
                continue
            for line in text.decode().splitlines():
                name = line.split("{")[0].removesuffix("_total")  # a counter's exported name
                if name in wanted and 'model="model"' in line:
                    seen.add(name)
                    assert name != "ray_aotc_requests" or 'status="' in line
        time.sleep(1)
    assert seen == set(wanted)


def test_replica_killed_mid_run(served):
    """SIGKILL one replica's process while 8 clients send 400 requests: every request is
    answered correctly (clients retry connection errors and 5xx answers), and Serve starts
    a replacement."""
    model = _direct(served.package)
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal((int(rng.integers(1, 5)), 10)).astype(np.float32)
              for _ in range(400)]
    with served.driver():
        replicas = _replicas(served, 2)
        victim = next(iter(replicas))
        halfway = threading.Event()
        outcome = {}
        load = threading.Thread(target=lambda: outcome.setdefault("r", run_load(
            served.url, inputs, clients=8, on_answer=lambda n: n >= 100 and halfway.set())))
        load.start()
        assert halfway.wait(timeout=300)
        os.kill(victim, signal.SIGKILL)
        load.join(timeout=600)
        result = outcome["r"]
        assert not result.errors, result.errors[:3]
        assert all(a is not None for a in result.answers)
        for x, y in zip(inputs, result.answers):
            np.testing.assert_array_equal(y, model(x))
        # Serve replaces the dead replica: two replicas answer again, the victim not among them
        assert victim not in _replicas(served, 2, timeout=180, exclude={victim})
    print(f"retries after the kill: {result.retries}")



def test_rollout_of_a_new_version(served, readme_package_v2):
    """Deploying a new package under the same name replaces the replicas one by one while 4
    clients keep sending: every request gets the old or the new version's answer, none is
    lost, and afterwards every answer is the new version's."""
    from aotc.serve import ServeOptions, deploy

    old, new = _direct(served.package), _direct(readme_package_v2)
    rng = np.random.default_rng(4)
    rolled = threading.Event()
    sent: list[tuple[np.ndarray, object]] = []

    def keep_sending():
        while not rolled.is_set():
            chunk = [rng.standard_normal((2, 10)).astype(np.float32) for _ in range(20)]
            result = run_load(served.url, chunk, clients=4)
            assert not result.errors, result.errors[:3]
            sent.extend(zip(chunk, result.answers))

    with served.driver():
        load = threading.Thread(target=keep_sending)
        load.start()
        port = int(served.url.split(":")[1])
        try:
            deploy(readme_package_v2, ServeOptions(replicas=2, max_batch_size=served.max_batch,
                                                   batch_wait_ms=5, version="2"),
                   port=port, via_object_store=False)  # this driver leaves: replicas read the path
        finally:
            rolled.set()
            load.join(timeout=600)
    versions = ["old" if np.array_equal(y, old(x)) else "new" if np.array_equal(y, new(x))
                else "wrong" for x, y in sent]
    assert "wrong" not in versions and versions[0] == "old"
    print(f"during the rollout: {versions.count('old')} old and {versions.count('new')} new answers")
    after = [rng.standard_normal((2, 10)).astype(np.float32) for _ in range(50)]
    result = run_load(served.url, after, clients=4)
    assert not result.errors
    for x, y in zip(after, result.answers):
        np.testing.assert_array_equal(y, new(x))
    client = httpclient.InferenceServerClient(served.url)
    assert client.get_model_metadata("model")["versions"] == ["2"]
    client.close()


def test_weights_rolled_out_with_load_constants(served, readme_package_v2, tmp_path):
    """After the rollout above the second version serves; deploying it again with the first
    version's weights (an .npz) rolls the replicas over, each loading the package and then
    those weights with load_constants: answers are the first version's again."""
    import torch
    from model import Model  # examples/model.py

    from aotc.serve import ServeOptions, deploy

    torch.manual_seed(0)  # the first version's weights, as the conftest compiled them
    weights = tmp_path / "v1.npz"
    np.savez(weights, **{k: v.numpy() for k, v in Model().state_dict().items()})
    first, second = _direct(served.package), _direct(readme_package_v2)
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((3, 10)).astype(np.float32) for _ in range(40)]
    assert not any(np.array_equal(first(x), second(x)) for x in inputs)
    with served.driver():
        deploy(readme_package_v2, ServeOptions(replicas=2, max_batch_size=served.max_batch,
                                               batch_wait_ms=5, version="2", weights=str(weights)),
               port=int(served.url.split(":")[1]), via_object_store=False)
    result = run_load(served.url, inputs, clients=4)
    assert not result.errors
    for x, y in zip(inputs, result.answers):
        np.testing.assert_array_equal(y, first(x))
