"""`aotc serve`: start or join a Ray cluster, serve every model of a package over the v2
inference protocol (Ray Serve, the `serve` extra), print the URLs, stop cleanly on Ctrl-C."""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import time


def add_serve_command(sub) -> None:
    p = sub.add_parser("serve", help="serve a package's models on Ray Serve (KServe/Triton v2 "
                       "HTTP protocol)")
    p.add_argument("package", help="the .pt2 package")
    p.add_argument("--replicas", type=int, default=1, help="replicas per model (default 1)")
    p.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    p.add_argument("--host", default="127.0.0.1",
                   help="HTTP address to bind (default 127.0.0.1; 0.0.0.0 for every interface)")
    p.add_argument("--address", default=None,
                   help="join this Ray cluster (HOST:PORT of its head, or 'auto'); without it a "
                   "local cluster is started and stopped with the command")
    p.add_argument("--threads", type=int, default=1, help="threads per replica (default 1)")
    p.add_argument("--cpus-per-replica", type=float, default=None,
                   help="CPUs each replica reserves in Ray (default: --threads)")
    p.add_argument("--max-batch-size", type=int, default=1,
                   help="rows of the batch dim that concurrent requests may be stacked into "
                   "(default 1: no batching; capped at the dim's max). Only for models whose "
                   "rows are independent along their dim 0")
    p.add_argument("--batch-wait-ms", type=float, default=2.0,
                   help="how long a batch waits for more requests (default 2 ms)")
    p.add_argument("--max-sequences", type=int, default=4,
                   help="for a decoder LM (input_ids, cache_position, its cache as state): "
                   "requests a replica decodes at once, each on a state of its own; more wait "
                   "(default 4)")
    p.add_argument("--version", default="1", help="the version the v2 endpoints report")
    p.add_argument("--from-path", action="store_true",
                   help="replicas open the package's path (every node must see it) instead of "
                   "reading it from Ray's object store")
    p.set_defaults(fn=cmd_serve)


def _stop_on_sigterm(signum, frame):
    raise KeyboardInterrupt


def cmd_serve(args: argparse.Namespace) -> int:
    import os

    from aotc.errors import PackageError

    if not os.path.isfile(args.package):
        raise PackageError(f"package {args.package} does not exist")
    if args.replicas < 1 or args.threads < 1 or args.max_batch_size < 1:
        print("aotc: error: --replicas, --threads and --max-batch-size must be at least 1",
              file=sys.stderr)
        return 2
    try:
        import ray
        from ray import serve

        from aotc.serve import ServeOptions, deploy, undeploy
    except ImportError as e:
        print(f"aotc: error: serving needs Ray Serve (pip install 'aotc[serve]'): {e}",
              file=sys.stderr)
        return 1
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    # Ctrl-C stops the command however it was started: a shell starts a background job (a
    # script's `cmd &`, CI runners) with SIGINT ignored, and Python then installs no handler
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # "local": a new cluster of this command's own, never one found running on the machine;
    # its node registers under the loopback address (only the HTTP proxy follows --host)
    local = {} if args.address else {"_node_ip_address": "127.0.0.1"}
    ray.init(address=args.address or "local", log_to_driver=False, logging_level=logging.WARNING,
             **local)
    models: list[str] = []
    try:
        options = ServeOptions(replicas=args.replicas, num_threads=args.threads,
                               num_cpus=args.cpus_per_replica or float(args.threads),
                               max_batch_size=args.max_batch_size,
                               batch_wait_ms=args.batch_wait_ms, version=args.version,
                               max_sequences=args.max_sequences)
        models = deploy(args.package, options, host=args.host, port=args.port,
                        via_object_store=not args.from_path)
        shown = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
        for model in models:
            print(f"serving model '{model}' ({args.replicas} replicas) at "
                  f"http://{shown}:{args.port}/v2/models/{model}", flush=True)
        print(f"ready: http://{shown}:{args.port}/v2/health/ready  (Ctrl-C stops)", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("stopping", flush=True)
    except RuntimeError as e:  # Serve could not deploy (a replica failed to start)
        print(f"aotc: error: {e}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        # each part of stopping as it ends, for whoever waits on the command
        if models:
            _timed("applications removed", undeploy, models)
        if args.address is None:  # the cluster is this command's own
            _timed("Serve shut down", serve.shutdown)
        _timed("Ray disconnected", ray.shutdown)
    return 0


def _timed(what: str, step, *args) -> None:
    start = time.monotonic()
    step(*args)
    print(f"stopping: {what} in {time.monotonic() - start:.1f} s", flush=True)
