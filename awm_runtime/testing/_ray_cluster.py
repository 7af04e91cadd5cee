"""A real multi-node Ray cluster on loopback, for tests and `awm-bench scale --ray`.

Each node is its own `ray start --block` process tree (its own raylet, object store and workers);
the head also runs the GCS. Nodes bind 127.0.0.2: Ray turns 127.0.0.1 into the machine's public
address, while any other 127.x address stays on loopback. Ray's servers still listen on every
interface, so the cluster requires a random token (RAY_AUTH_MODE=token) from every client.
Processes are tracked by pid (Ray's workers start their own sessions, so a process group does not
reach them) and everything is killed at `stop()`; nothing outlives the cluster.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOOPBACK_IP = "127.0.0.2"
OBJECT_STORE_BYTES = 80 * 1024 * 1024  # Ray's minimum is 75 MiB
READY_TIMEOUT_S = 120.0


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                ppid = int(Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            out.setdefault(ppid, []).append(int(entry.name))
    return out


def _started(pid: int) -> int | None:
    """When a process started (clock ticks since boot): with the pid, it names one process for good."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it (by parent pid, so sessions Ray's workers start do not hide them)."""
    tree, found, frontier = _children(), [pid], [pid]
    while frontier:
        frontier = [c for p in frontier for c in tree.get(p, [])]
        found.extend(frontier)
    return found


class LoopbackRayCluster:
    """`with LoopbackRayCluster(workers=1, node_env={"KEY_VAR": "..."}) as cluster:` then
    `awm-run --ray cluster.address` with `cluster.client_env()`."""

    def __init__(self, *, workers: int = 1, cpus: int = 1, node_env: dict[str, str] | None = None,
                 ip: str = LOOPBACK_IP) -> None:
        self.workers, self.cpus, self.ip = workers, cpus, ip
        self.port = _free_port(ip)
        self.address = f"{ip}:{self.port}"
        self.token = secrets.token_hex(16)
        self.node_env = dict(node_env or {})
        self.tmp = Path(tempfile.mkdtemp(prefix="awm-ray-"))
        self.nodes: list[subprocess.Popen[bytes]] = []
        self._seen: dict[int, int] = {}  # pid -> start time, so a recycled pid is never killed
        self._ray = str(Path(sys.executable).with_name("ray"))
        if not Path(self._ray).exists():
            self._ray = shutil.which("ray") or "ray"

    def client_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment a driver needs to join (the token; no keys)."""
        return {**(os.environ if base is None else base), **self._ray_env()}

    def _ray_env(self) -> dict[str, str]:
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token, "RAY_USAGE_STATS_ENABLED": "0"}

    def start(self) -> LoopbackRayCluster:
        try:
            self._node("head", ["--head", "--port", str(self.port), "--include-dashboard=false",
                                "--temp-dir", str(self.tmp)])
            for i in range(self.workers):
                self.add_node(f"worker-{i}")
        except BaseException:
            self.stop()
            raise
        return self

    def add_node(self, name: str) -> subprocess.Popen[bytes]:
        return self._node(name, ["--address", self.address])

    def _node(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        logfile = self.tmp / f"{name}.log"
        with logfile.open("wb") as out:
            proc = subprocess.Popen(
                [self._ray, "start", "--block", "--node-ip-address", self.ip, "--num-cpus", str(self.cpus),
                 "--object-store-memory", str(OBJECT_STORE_BYTES), "--disable-usage-stats",
                 "--include-log-monitor=false", *args],
                env={**os.environ, **self.node_env, **self._ray_env()}, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        self.nodes.append(proc)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while b"Ray runtime started" not in logfile.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = logfile.read_bytes()[-2000:].decode(errors="replace")
                raise RuntimeError(f"ray node {name} did not start:\n{tail}")
            time.sleep(0.2)
        self._track()
        return proc

    def _track(self) -> None:
        for proc in self.nodes:
            for pid in descendants(proc.pid):
                if (started := _started(pid)) is not None:
                    self._seen.setdefault(pid, started)

    def pids(self, node: int) -> list[int]:
        """The live processes of one node (0: the head): `ray start`, raylet, agents, workers."""
        return [p for p in descendants(self.nodes[node].pid) if Path(f"/proc/{p}").exists()]

    def kill_node(self, node: int) -> None:
        """SIGKILL a node's whole process tree at once, as a crashed machine would stop."""
        self._track()
        for pid in self.pids(node):
            self._kill(pid, signal.SIGKILL)
        self.nodes[node].wait(10)

    def stop(self) -> None:
        """Stop every node (TERM, then KILL), and every process the cluster ever had; remove its files."""
        self._track()
        for proc in reversed(self.nodes):
            self._kill(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in self.nodes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.1, deadline - time.monotonic()))
        self._track()
        for pid in list(self._seen):
            self._kill(pid, signal.SIGKILL)
        for proc in self.nodes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)
        deadline = time.monotonic() + 10
        while self.alive_pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def alive_pids(self) -> list[int]:
        """Processes of this cluster still running (zombies excluded)."""
        alive = []
        for pid, started in self._seen.items():
            if _started(pid) != started:
                continue
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != "Z":
                alive.append(pid)
        return alive

    def _kill(self, pid: int, sig: signal.Signals) -> None:
        """Signal a process of this cluster, unless its pid now names another process."""
        if _started(pid) != self._seen.get(pid, _started(pid)):
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)

    def __enter__(self) -> LoopbackRayCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
