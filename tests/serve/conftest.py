"""Fixtures of the serving tests: the README's model as a package, and that package served by
`aotc serve` with 2 replicas on a two-node Ray cluster on 127.0.0.1 (1 CPU per node), at
most MAX_BATCH rows per run."""
from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from ray_cluster import LocalCluster, follow, free_port, stop_by_ctrl_c, use_token

ROOT = Path(__file__).resolve().parents[2]
use_token()  # before any test module imports ray
MAX_BATCH = 8  # rows per run: small, so that load reaches it


def _compile_readme_model(folder: Path, seed: int) -> str:
    import torch
    from model import Model  # examples/model.py

    import aotc

    torch.manual_seed(seed)
    with torch.no_grad():
        batch = torch.export.Dim("batch", min=1, max=1024)
        ep = torch.export.export(Model(), (torch.randn(8, 10),), dynamic_shapes={"x": {0: batch}})
        path = aotc.compile_and_package(ep, package_path=folder / "model.pt2")
        # the direct run that served answers are compared with is the eager model's
        for b in (1, 5):
            x = torch.randn(b, 10)
            torch.testing.assert_close(aotc.load_package(path)(x), ep.module()(x))
    return str(path)


@pytest.fixture(scope="session")
def readme_package(tmp_path_factory) -> str:
    return _compile_readme_model(tmp_path_factory.mktemp("v1"), seed=0)


@pytest.fixture(scope="session")
def readme_package_v2(tmp_path_factory) -> str:
    """The same model with other weights: a new version to roll out."""
    return _compile_readme_model(tmp_path_factory.mktemp("v2"), seed=1)


@dataclass
class Served:
    url: str  # host:port, as tritonclient takes it
    package: str
    cluster: LocalCluster
    log: list[str]
    max_batch: int  # rows per run at most

    @contextmanager
    def driver(self):
        """This process connected to the cluster as a Ray driver (with its token)."""
        import ray

        ray.init(address=self.cluster.address, log_to_driver=False, logging_level="ERROR")
        try:
            yield ray
        finally:
            ray.shutdown()


@pytest.fixture(scope="module")
def served(readme_package):
    """`aotc serve model.pt2 --replicas 2 --address HEAD` on a fresh two-node cluster; the
    cluster's every process is stopped afterwards, whatever happened."""
    cluster = LocalCluster(nodes=2, cpus=1)
    proc, lines = None, []
    try:
        cluster.start()
        port = free_port()
        env = {**cluster.env, "PYTHONFAULTHANDLER": "1", "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "src"), cluster.env.get("PYTHONPATH", "")])}
        proc = subprocess.Popen(
            [sys.executable, "-m", "aotc.cli", "serve", str(readme_package), "--replicas", "2",
             "--port", str(port), "--address", cluster.address, "--max-batch-size", str(MAX_BATCH),
             "--batch-wait-ms", "5"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        cluster.adopt(proc.pid)
        lines = follow(proc, "ready:", timeout=300)
        assert proc.poll() is None and any(x.startswith("ready:") for x in lines), \
            "aotc serve did not come up:\n" + "\n".join(lines)
        yield Served(f"127.0.0.1:{port}", str(readme_package), cluster, lines, MAX_BATCH)
    finally:
        stopped = None
        try:
            if proc is not None and proc.poll() is None:
                # Ctrl-C: the command removes its applications
                stopped = stop_by_ctrl_c(proc, lines, timeout=60)
        finally:
            cluster.stop()  # raises if any process of the cluster is left
    # Ctrl-C stopped the command cleanly
    assert stopped == 0, f"aotc serve exited with {stopped} on Ctrl-C:\n" + "\n".join(lines)
