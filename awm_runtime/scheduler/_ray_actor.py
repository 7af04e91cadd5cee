"""An episode actor: runs its share of a Ray run's episodes on one node, with that node's own world
worker pool, verifier sandbox and model clients (`awm-run --ray`).

It never writes the run directory: each finished episode goes back to the driver as one record
line, and its events are buffered (redacted, as JSON lines) until the driver's next beat drains
them. Keys come from the node's own environment, as on a single machine; nothing here carries
one. Model calls are admitted with leases from the run's limits actor, so an endpoint's limits
hold across the cluster. Ray wraps this class with `ray.remote` on the driver; the module itself
does not import Ray at import time.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any, cast

import orjson
import structlog

from awm_runtime._config import RunConfig
from awm_runtime._errors import AwmError, ConfigError
from awm_runtime._log import get_logger
from awm_runtime._types import EpisodeRecord, EpisodeSpec, Task, WorkerRef
from awm_runtime._units import Unit
from awm_runtime.logs import EventLogSink, configure_logging, new_tool_sets, record_line
from awm_runtime.models import RENEW_EVERY_S, AttemptError, LimiterKey, endpoint_stats, shutdown, use_cluster_limits
from awm_runtime.scheduler._control import LoopLag, RunControl, cpu_s, must_finish, peak_rss_mib, rss_mib
from awm_runtime.scheduler._episode_pool import EpisodePool
from awm_runtime.scheduler._prepare import PreparedRun, prepare
from awm_runtime.scheduler._progress import endpoint_dicts

log = get_logger("awm_runtime.scheduler")
# Events wait here between two beats of the driver; past this, the oldest are dropped (and counted).
EVENT_BUFFER_BYTES = 64 << 20


def tasks_digest(tasks: Iterable[Task]) -> str:
    """What the driver planned and a node will run must be the same tasks (same data, same texts)."""
    h = hashlib.sha256()
    for t in sorted(tasks, key=lambda t: t.key):
        h.update(f"{t.scenario}\t{t.task_idx}\t{t.text}\n".encode())
    return h.hexdigest()


class EventBuffer:
    """Where this process's structlog lines wait for the driver (a text stream for configure_logging)."""

    def __init__(self, limit: int = EVENT_BUFFER_BYTES) -> None:
        self._parts: list[str] = []
        self._size = 0
        self._limit = limit
        self._lock = threading.Lock()
        self.dropped = 0

    def write(self, text: str) -> int:
        with self._lock:
            self._parts.append(text)
            self._size += len(text)
            while self._size > self._limit and len(self._parts) > 1:
                self._size -= len(self._parts.pop(0))
                self.dropped += 1
        return len(text)

    def flush(self) -> None:
        return None

    def drain(self) -> bytes:
        with self._lock:
            data, self._parts, self._size = "".join(self._parts), [], 0
        return data.encode()


class RayLeases:
    """A LeaseSource: the run's limits actor, reached through its Ray handle (Ray errors stop here)."""

    def __init__(self, handle: Any, holder: str) -> None:
        self.handle, self.holder = handle, holder
        self.broken = False  # the limits actor failed: records since may hold its errors, not the episodes'

    async def acquire(self, key: LimiterKey, lease_id: str, estimate_tokens: int) -> None:
        try:
            granted = await self.handle.acquire.remote(key, self.holder, lease_id, estimate_tokens)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the limits actor is gone: no call may go out unlimited
            self.broken = True
            why = f"the run's limits actor is unreachable ({type(exc).__name__})"
            raise AttemptError(f"{why}", kind="fatal", detail=why) from exc
        if not granted:
            why = "the run's limits actor refused a lease: this actor was taken for lost"
            raise AttemptError(why, kind="fatal", detail=why)

    def release(self, lease_id: str, outcome: str, prompt_tokens: int, completion_tokens: int) -> None:
        self.handle.release.remote(lease_id, outcome, prompt_tokens, completion_tokens)

    def cancel(self, lease_id: str) -> None:
        self.handle.cancel.remote(lease_id)

    def renew(self) -> None:
        self.handle.renew.remote(self.holder)


class EpisodeActor:
    """One Ray actor of a run: prepares on its node, then runs the episodes the driver sends it."""

    def __init__(self, init: dict[str, Any]) -> None:
        self.init = init  # settings only: config (key variable names, never keys), run id, limits handle
        self.events = EventBuffer()
        self.control = RunControl(float(init["grace_s"]))
        self.lag = LoopLag()
        self.prep: PreparedRun | None = None
        self.pool: EpisodePool | None = None
        self.worker = WorkerRef()
        self._queue: asyncio.Queue[Unit | None] = asyncio.Queue()
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._background: list[asyncio.Task[Any]] = []
        self._pool_task: asyncio.Task[None] | None = None
        self._leases: RayLeases | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.episodes = 0
        self._sent_tools: set[str] = set()  # tool sets this actor already sent; the driver writes each once
        self._overhead: dict[str, float] = {}
        self._ready_cpu_s = 0.0

    async def ready(self, preflight: str) -> dict[str, Any]:
        """Prepare this node (worlds, model clients, preflight); errors come back as data, one line."""
        try:
            return await self._ready(preflight)
        except ConfigError as exc:
            return {"error": str(exc), "config": True, **self._where()}
        except Exception as exc:
            message = f"{exc}" if isinstance(exc, AwmError) else f"{type(exc).__name__}: {exc}"
            return {"error": message, "config": False, **self._where()}

    def _where(self) -> dict[str, Any]:
        return {"node": self.worker.node, "ip": self.worker.host, "pid": self.worker.pid}

    async def _ready(self, preflight: str) -> dict[str, Any]:
        import ray

        init = self.init
        ip = ray.util.get_node_ip_address()
        self.worker = WorkerRef(node=ray.get_runtime_context().get_node_id(), host=ip, pid=os.getpid())
        configure_logging(cast(IO[str], self.events))
        structlog.contextvars.bind_contextvars(actor=init["index"])  # ray_started maps actor -> node, pid
        from awm_runtime._version import __version__

        if init["version"] != __version__:
            raise ConfigError(f"awm-runtime {__version__} is installed here, the driver runs {init['version']}: "
                              "install the same version on every node")
        config = await asyncio.to_thread(self._node_config)
        self._leases = RayLeases(init["limits"], init["holder"])
        use_cluster_limits(self._leases)
        prep = await prepare(config.model_copy(update={"preflight": preflight}), check=preflight != "off")
        configure_logging(cast(IO[str], self.events), secrets=prep.secrets)
        wanted = {tuple(k) for k in init["tasks"]}
        prep.tasks = [t for t in prep.world.tasks() if t.key in wanted]
        if len(prep.tasks) != len(wanted) or tasks_digest(prep.tasks) != init["digest"]:
            await must_finish(prep.world.aclose())
            raise ConfigError(f"the tasks of --worlds {config.worlds} differ here from the driver's: "
                              "every node needs the same data")
        self.prep = prep
        self.pool = EpisodePool(prep, run_id=init["run_id"], sinks=[EventLogSink()], concurrency=init["capacity"],
                                control=self.control, worker=self.worker)
        self._pool_task = asyncio.create_task(self.pool.run(self._next_unit, self._done))
        self._pool_task.add_done_callback(lambda _: self._release_waiting())
        self._background = [asyncio.create_task(self.lag.run()), asyncio.create_task(self._renew())]
        self._overhead = await asyncio.to_thread(ray_overhead)
        self._ready_cpu_s = cpu_s()
        log.info("actor_ready", pid=os.getpid(), host=socket.gethostname(), capacity=init["capacity"])
        return self._where()

    def _node_config(self) -> RunConfig:
        """The run's config on this node: its worlds must be here; the driver's awm.toml is written here."""
        config = RunConfig(**self.init["config"])
        if config.worlds != "builtin" and not Path(config.worlds).is_dir():
            raise ConfigError(f"--worlds {config.worlds}: no such directory on this node; every node needs "
                              "the worlds at the same path")
        if config.solutions is not None and not Path(config.solutions).is_file():
            raise ConfigError(f"--solutions {config.solutions}: no such file on this node")
        if self.init.get("config_toml") is not None:  # so that nodes need no copy of the driver's awm.toml
            self._tmp = tempfile.TemporaryDirectory(prefix="awm-ray-")
            path = Path(self._tmp.name) / "awm.toml"
            path.write_text(self.init["config_toml"], encoding="utf-8")
            config = config.model_copy(update={"config_path": path})
        return config

    async def _next_unit(self) -> Unit | None:
        unit = await self._queue.get()
        if unit is None:
            self._queue.put_nowait(None)  # wake the next idle worker too
        return unit

    async def _done(self, unit: Unit, records: list[EpisodeRecord]) -> None:
        future = self._waiting.pop(id(unit), None)
        payload = await asyncio.to_thread(lambda: b"".join(record_line(r) for r in records))
        self.episodes += len(records)
        if future is not None and not future.done():
            lost = self._leases is not None and self._leases.broken  # not the episode's fault: not a record
            if lost:
                future.set_result({"status": "lost"})
            else:  # each tool set goes once, with the first record of this actor that names it
                future.set_result({"status": "done", "lines": payload,
                                   "tools": new_tool_sets(records, self._sent_tools)})

    def _release_waiting(self) -> None:
        """The pool has ended (stop, or finish): episodes it never ran or cancelled go back as `not_run`."""
        for future in self._waiting.values():
            if not future.done():
                future.set_result({"status": "not_run"})

    async def _renew(self) -> None:
        while True:
            if self._leases is not None:
                self._leases.renew()
            await asyncio.sleep(RENEW_EVERY_S)

    async def run(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Run one episode; its record line, or `not_run` when this actor is stopping."""
        if self.pool is None or self.control.stop_requested:
            return {"status": "not_run"}
        unit = Unit([EpisodeSpec(**spec)])
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[id(unit)] = future
        self._queue.put_nowait(unit)
        try:
            return await future
        finally:
            self._waiting.pop(id(unit), None)

    def beat(self) -> dict[str, Any]:
        """Live figures and the events since the last beat (the driver appends them to events.jsonl)."""
        return {"in_flight": self.pool.in_flight if self.pool else 0, "endpoints": endpoint_dicts(endpoint_stats()),
                "lag_p99_ms": self.lag.percentile(0.99), "rss_mib": round(rss_mib(), 1),
                "events": self.events.drain()}

    def stop(self, grace_s: float, hard: bool = False) -> None:
        """The driver was asked to stop: no new episodes; in-flight ones get `grace_s`, or none if `hard`."""
        self.control.grace_s = grace_s
        self.control.stop("driver", hard=hard)
        self._queue.put_nowait(None)

    async def finish(self) -> dict[str, Any]:
        """End this actor's share: stop its pool (whatever still runs was given up by the driver, e.g. a
        cancelled run: it is cancelled now, not recorded), close its world and clients, report."""
        self.control.stop("finish", hard=True)
        self._queue.put_nowait(None)
        if self._pool_task is not None:
            await must_finish(self._pool_task)
        self._release_waiting()
        for task in self._background:
            task.cancel()
        if self.prep is not None:
            await must_finish(self.prep.world.aclose())
        await must_finish(shutdown())
        use_cluster_limits(None)
        if self._tmp is not None:
            self._tmp.cleanup()
        overhead = await asyncio.to_thread(ray_overhead)
        for k in ("cpu_s", "limits_cpu_s"):  # during the run, not before it
            overhead[k] = round(overhead[k] - self._overhead.get(k, 0.0), 3)
        return {"ray_node_overhead": overhead, **self._where(), "episodes": self.episodes,
                "cancelled": self.pool.cancelled if self.pool else 0,
                "loop_lag_ms": self.lag.to_dict(), "loop_slices": self.pool.slices.to_dict() if self.pool else {},
                "peak_rss_mib": round(peak_rss_mib(), 1),
                "startup_cpu_s": round(self._ready_cpu_s, 3), "cpu_s": round(cpu_s() - self._ready_cpu_s, 3),
                "world_cpu_s": round(cpu_s(-1), 3),
                "events_dropped": self.events.dropped, "events": self.events.drain()}


def ray_overhead() -> dict[str, float]:
    """What Ray itself costs on this node: the raylet and what it started (agents, idle workers, the
    limits actor), less the episode actors and their world processes. RSS now, CPU seconds so far."""
    tick = os.sysconf("SC_CLK_TCK")
    kids: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        kids.setdefault(int(fields[1]), []).append(int(entry.name))
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    rss = cpu_total = limits = 0.0
    frontier = [os.getppid()]  # an actor's parent is its node's raylet
    while frontier:
        pid = frontier.pop()
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.startswith(b"ray::EpisodeActor"):
            continue  # ours, with everything below it
        if cmdline.startswith(b"ray::LimitsService"):
            limits += cpu.get(pid, 0.0)  # ours too, but it lives among Ray's: reported apart
        else:
            cpu_total += cpu.get(pid, 0.0)
        rss += rss_mib(pid)
        frontier.extend(kids.get(pid, []))
    return {"rss_mib": round(rss, 1), "cpu_s": round(cpu_total, 3), "limits_cpu_s": round(limits, 3)}


def parse_record(line: bytes) -> EpisodeRecord:
    return EpisodeRecord.model_validate(orjson.loads(line))
