"""`aotc serve` on its own: arguments checked before Ray starts, and a local cluster of the
command's own serving a package of two models (one of them generating, requests decoding at
once over HTTP) that Ctrl-C stops completely."""
from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import tritonclient.http as httpclient
from ray_cluster import follow, free_port, session_processes, stop_by_ctrl_c
from v2_load import infer

import aotc
from aotc.cli import main
from aotc.runtime.generate import generate

ROOT = Path(__file__).resolve().parents[2]


def test_arguments_checked_before_ray_starts(tmp_path, capsys, readme_package):
    assert main(["serve", str(tmp_path / "missing.pt2")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main(["serve", readme_package, "--replicas", "0"]) == 2
    assert "--replicas" in capsys.readouterr().err


def _as_a_background_job():
    """SIGINT ignored, as a shell starts `cmd &` in a script: Ctrl-C must still stop it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


PROMPTS = ([1, 2, 3], [7, 7], [30, 4, 12, 9])


def _readme_and_lm(folder: Path) -> str:
    """One package of two models: the README's, and a decoder LM that generates."""
    import torch
    from model import Model  # examples/model.py

    from models import export_tiny_lm

    torch.manual_seed(0)
    with torch.no_grad():
        batch = torch.export.Dim("batch", min=1, max=1024)
        readme = torch.export.export(Model(), (torch.randn(8, 10),),
                                     dynamic_shapes={"x": {0: batch}})
    return aotc.compile_and_package({"model": readme, "lm": export_tiny_lm()},
                                    package_path=folder / "two.pt2")


def _generate_over_http(port: int, prompt: list[int]) -> list[int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("POST", "/v2/models/lm/generate", body=json.dumps(
            {"input_ids": prompt, "parameters": {"max_tokens": 6}}))
        resp = conn.getresponse()
        body = resp.read()
        assert resp.status == 200, body
        return json.loads(body)["output_ids"]
    finally:
        conn.close()


def test_local_cluster_served_and_stopped_by_ctrl_c(tmp_path):
    """The README model answers, three generations sent at once each give the tokens they
    give alone, and Ctrl-C stops the command and its cluster."""
    package = _readme_and_lm(tmp_path)
    port = free_port()
    ray_dir = tempfile.mkdtemp(prefix="aotc-ray-", dir="/tmp")  # short: Ray's socket paths
    env = {**os.environ, "RAY_TMPDIR": ray_dir, "PYTHONFAULTHANDLER": "1", "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "aotc.cli", "serve", package,
                             "--port", str(port)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=_as_a_background_job)
    try:
        lines = follow(proc, "ready:", timeout=300)
        assert proc.poll() is None and any(x.startswith("ready:") for x in lines), "\n".join(lines)
        assert f"at http://127.0.0.1:{port}/v2/models/model" in "\n".join(lines)
        client = httpclient.InferenceServerClient(f"127.0.0.1:{port}")
        x = np.random.default_rng(0).standard_normal((4, 10)).astype(np.float32)
        # a dynamic batch: the first call of a shape takes the general path, the next ones the
        # short path that learned the shape; Ctrl-C must stop the command after both
        for _ in range(3):
            np.testing.assert_array_equal(infer(client, x), aotc.load_package(package, "model")(x))
        client.close()
        alone = aotc.load_package(package, "lm")
        with ThreadPoolExecutor(len(PROMPTS)) as pool:
            served = list(pool.map(lambda p: _generate_over_http(port, p), PROMPTS))
        assert served == [generate(alone, p, 6) for p in PROMPTS]
        assert stop_by_ctrl_c(proc, lines, timeout=120) == 0, "\n".join(lines)
        deadline = time.monotonic() + 10  # the reading thread takes the last lines
        while "stopping" not in lines and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "stopping" in lines
        deadline = time.monotonic() + 30  # Ray's processes end after the command
        while session_processes({proc.pid}) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not session_processes({proc.pid})
    finally:
        for pid in session_processes({proc.pid}):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(ray_dir, ignore_errors=True)
