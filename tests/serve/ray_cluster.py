"""A local multi-node Ray cluster for tests: `ray start` nodes on this machine, each in its
own session (process group leader), with a private temp dir, free ports and a token that
only this cluster knows. `stop()` ends exactly the processes of those sessions (Ray's
daemons and the workers they started), never other Ray processes on the machine."""
from __future__ import annotations

import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))


def use_token() -> None:
    """Token authentication for the clusters this process starts and joins. Ray reads it
    when it is imported, so this runs before `import ray`, for the whole process."""
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))


def _ephemeral_ports() -> tuple[int, int]:
    """The range the kernel draws ports from for bind(0) and connect()."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


_handed_out: set[int] = set()


def free_port() -> int:
    """A port nothing listens on, between Ray's worker ports (10002-19999 unless told) and
    the ephemeral range: a port the kernel hands out for bind(0) could be taken again by one
    of the dozens of ports Ray's own processes bind before the server binds this one
    (Serve's proxy once failed to bind so). Each pytest-xdist worker draws from its own
    slice, so two test processes never draw the same port either."""
    low = min(_ephemeral_ports()[0], 32768)
    first, slices = 20000, 8
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    width = (low - first) // slices
    if width < 16:  # a machine whose ephemeral range starts low: the kernel's choice
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    start = first + (int(worker) % slices if worker.isdigit() else 0) * width
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for port in rng.sample(range(start, start + width), width):
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free port in {start}-{start + width - 1}")


def session_processes(sids: set[int]) -> list[int]:
    """Every live process whose session is one of `sids` (Ray's workers start their own
    process groups but stay in the session), and their descendants."""
    parent, session = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z":
            continue
        parent[int(entry)], session[int(entry)] = int(fields[1]), int(fields[3])
    found = {p for p, s in session.items() if s in sids}
    grew = True
    while grew:
        more = {p for p, pp in parent.items() if pp in found and p not in found}
        found |= more
        grew = bool(more)
    return sorted(found)


class LocalCluster:
    """`nodes` Ray nodes of `cpus` CPUs each, joined over 127.0.0.1."""

    def __init__(self, nodes: int = 2, cpus: int = 1):
        self.nodes, self.cpus = nodes, cpus
        # short: Ray's socket paths live under it and must fit in 107 characters
        self.temp_dir = tempfile.mkdtemp(prefix="aotc-ray-", dir="/tmp")
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        # token authentication: the head listens on every interface, the token keeps
        # everyone but this test's processes out (see use_token)
        self.env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
        self._sids: set[int] = set()
        self.metrics_ports: list[int] = []  # each node's Prometheus endpoint

    def _ray_start(self, args: list[str]) -> None:
        metrics = free_port()
        self.metrics_ports.append(metrics)
        ports = ["--dashboard-agent-listen-port", str(free_port()), "--metrics-export-port",
                 str(metrics), "--runtime-env-agent-port", str(free_port())]
        # every node registers under the loopback address, so all traffic stays on it
        cmd = [RAY, "start", f"--num-cpus={self.cpus}", f"--temp-dir={self.temp_dir}",
               "--node-ip-address=127.0.0.1",
               "--disable-usage-stats", *ports, *args]
        proc = subprocess.Popen(cmd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        self._sids.add(proc.pid)  # its daemons stay in the session it leads
        out, _ = proc.communicate(timeout=180)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{out}")

    def start(self) -> LocalCluster:
        self._ray_start(["--head", f"--port={self.port}", "--include-dashboard=false",
                         f"--ray-client-server-port={free_port()}",
                         f"--dashboard-port={free_port()}"])
        for _ in range(self.nodes - 1):
            self._ray_start([f"--address={self.address}"])
        return self

    def stop(self) -> None:
        """SIGTERM to every process of the cluster's sessions, SIGKILL to what is left after
        5 s; returns when none is left."""
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 10.0)):
            pids = session_processes(self._sids)
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait
            while session_processes(self._sids) and time.monotonic() < deadline:
                time.sleep(0.2)
        left = session_processes(self._sids)
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        if left:
            raise RuntimeError(f"Ray processes {left} outlived SIGKILL")

    def adopt(self, session: int) -> None:
        """Stop the processes of `session` (a client of the cluster started with
        start_new_session) together with the cluster's."""
        self._sids.add(session)

    def processes(self) -> list[int]:
        return session_processes(self._sids)


def stop_by_ctrl_c(proc: subprocess.Popen, lines: list[str], timeout: float) -> int:
    """Ctrl-C to `proc` and its exit code; a process that outlives `timeout` is sent SIGABRT
    (with PYTHONFAULTHANDLER set it prints every thread's stack) and the test fails with
    what it printed, so the step it hung in is named."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        time.sleep(1)  # the reading thread takes the last lines
        raise AssertionError(f"still running {timeout:.0f} s after Ctrl-C:\n" + "\n".join(lines)) from None


def follow(proc: subprocess.Popen, until: str, timeout: float) -> list[str]:
    """The lines `proc` prints, read on a thread until one starts with `until`, the process
    ends or `timeout` passes; the thread keeps reading afterwards, so the pipe never fills.
    The returned list goes on growing."""
    lines: list[str] = []
    seen = threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line.rstrip())
            if line.startswith(until):
                seen.set()
        seen.set()  # the process ended

    threading.Thread(target=read, daemon=True).start()
    seen.wait(timeout=timeout)
    return lines
