"""Serving throughput and latency: a package served by aotc.serve on a local Ray cluster,
driven by concurrent tritonclient.http clients on loopback. Bounded: a fixed number of
requests per configuration. Prints a markdown table (docs/SERVING.md holds the latest).

    python benchmarks/serve_bench.py --replicas 1,2 --max-batch-size 1,8 --requests 2000
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import socket
import sys
import tempfile
import threading
import time

import numpy as np


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _readme_package(folder: str) -> str:
    """The README's model (examples/model.py), compiled with aotc."""
    import torch

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
    from model import Model

    import aotc

    torch.manual_seed(0)
    with torch.no_grad():
        batch = torch.export.Dim("batch", min=1, max=1024)
        ep = torch.export.export(Model(), (torch.randn(8, 10),), dynamic_shapes={"x": {0: batch}})
        return aotc.compile_and_package(ep, package_path=os.path.join(folder, "model.pt2"))


def _drive(url: str, inputs: list[np.ndarray], clients: int) -> tuple[float, np.ndarray, list]:
    """Send every input once from `clients` threads: (seconds, latencies in ms, answers)."""
    import tritonclient.http as httpclient

    latencies = np.zeros(len(inputs))
    answers: list = [None] * len(inputs)
    lock, it = threading.Lock(), iter(range(len(inputs)))

    def worker():
        client = httpclient.InferenceServerClient(url, network_timeout=60)
        while True:
            with lock:
                k = next(it, None)
            if k is None:
                break
            x = inputs[k]
            t = httpclient.InferInput("x", list(x.shape), "FP32")
            t.set_data_from_numpy(x)
            start = time.perf_counter()
            answers[k] = client.infer("model", [t]).as_numpy("sigmoid")
            latencies[k] = (time.perf_counter() - start) * 1000
        client.close()

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    start = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.perf_counter() - start, latencies, answers


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--package", help="a .pt2 package with model 'model' (default: the README's)")
    ap.add_argument("--replicas", default="1,2")
    ap.add_argument("--max-batch-size", default="1,8", help="rows per run; 1: no batching")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--rows", type=int, default=1, help="rows per request")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="aotc-bench-", dir="/tmp")  # short: Ray's socket paths
    os.environ["RAY_TMPDIR"] = work
    package = args.package or _readme_package(work)
    import ray

    from aotc.runtime import load_package
    from aotc.serve import ServeOptions, deploy, undeploy

    direct = load_package(package)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((args.rows, 10)).astype(np.float32) for _ in range(args.requests)]
    replicas = [int(r) for r in args.replicas.split(",")]
    batches = [int(b) for b in args.max_batch_size.split(",")]
    ray.init(address="local", num_cpus=max(replicas), include_dashboard=False,
             log_to_driver=False, logging_level="ERROR")
    rows = []
    port = _free_port()  # Serve's proxy keeps the address it started with
    try:
        for n in replicas:
            for b in batches:
                models = deploy(package, ServeOptions(replicas=n, max_batch_size=b), port=port)
                url = f"127.0.0.1:{port}"
                _drive(url, inputs[:200], args.clients)  # warm-up
                seconds, lat, answers = _drive(url, inputs, args.clients)
                for x, y in zip(inputs, answers):
                    np.testing.assert_array_equal(y, direct(x))
                rows.append((n, b, args.requests / seconds, *np.percentile(lat, [50, 99])))
                print(f"replicas {n}, max batch {b}: {rows[-1][2]:.0f} requests/s, "
                      f"p50 {rows[-1][3]:.2f} ms, p99 {rows[-1][4]:.2f} ms", flush=True)
                undeploy(models)
    finally:
        from ray import serve

        serve.shutdown()
        ray.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor())
    print(f"\n{datetime.date.today()}, {cpu}, {os.cpu_count()} cores; {args.requests} requests "
          f"of {args.rows} row(s) from {args.clients} tritonclient.http clients (binary tensors)\n")
    print("| replicas | max batch (rows) | requests/s | p50 (ms) | p99 (ms) |")
    print("|---|---|---|---|---|")
    for n, b, rate, p50, p99 in rows:
        print(f"| {n} | {b} | {rate:.0f} | {p50:.2f} | {p99:.2f} |")


if __name__ == "__main__":
    main()
