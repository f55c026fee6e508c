"""`aotc serve` on its own: arguments checked before Ray starts, and a local cluster of the
command's own that Ctrl-C stops completely."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import tritonclient.http as httpclient
from ray_cluster import follow, free_port, session_processes, stop_by_ctrl_c
from v2_load import infer

import aotc
from aotc.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_arguments_checked_before_ray_starts(tmp_path, capsys, readme_package):
    assert main(["serve", str(tmp_path / "missing.pt2")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main(["serve", readme_package, "--replicas", "0"]) == 2
    assert "--replicas" in capsys.readouterr().err


def _as_a_background_job():
    """SIGINT ignored, as a shell starts `cmd &` in a script: Ctrl-C must still stop it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_local_cluster_served_and_stopped_by_ctrl_c(readme_package):
    port = free_port()
    ray_dir = tempfile.mkdtemp(prefix="aotc-ray-", dir="/tmp")  # short: Ray's socket paths
    env = {**os.environ, "RAY_TMPDIR": ray_dir, "PYTHONFAULTHANDLER": "1", "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "aotc.cli", "serve", readme_package,
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
            np.testing.assert_array_equal(infer(client, x), aotc.load_package(readme_package)(x))
        client.close()
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
