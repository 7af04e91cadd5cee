"""Running a run's episodes on a Ray cluster (`awm-run --ray ADDRESS|auto`): the driver's side.

The driver (this process) keeps everything a run owns: the plan, the run directory (it is the only
writer of episodes.jsonl, so every key lands once), events.jsonl, the summary and the live view.
Episodes run in async Ray actors (scheduler/_ray_actor.py), `--shards` per node (auto: one), each
with its node's own world worker pool and verifier sandbox. An endpoint's limits hold across the
cluster: every model call takes a lease from the run's one limits actor (models/_cluster_limits.py),
and a dead holder's leases return. A lost actor (its node died) costs only its in-flight episodes:
each runs once more on another actor, else stays unrecorded for `--resume`.

Keys never travel: each node reads them from its own environment, which `ray start` hands to its
workers. Ray's runtime_env would carry them, but Ray writes runtime_env env_vars in clear to the
runtime-env agent's log on every node (seen with Ray 2.60), and keeps them in the GCS.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import signal
import socket
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from awm_runtime._config import RunConfig
from awm_runtime._errors import ConfigError, WorkerLost
from awm_runtime._log import get_logger
from awm_runtime._types import EpisodeRecord, EpisodeSpec
from awm_runtime.logs import EventStream, ToolSets
from awm_runtime.models import EndpointStats, LimitsService, limiter_specs
from awm_runtime.scheduler._control import RunControl, must_finish
from awm_runtime.scheduler._plan import resolve_shards, split
from awm_runtime.scheduler._prepare import PreparedRun
from awm_runtime.scheduler._progress import RunProgress
from awm_runtime.scheduler._ray_actor import EpisodeActor, parse_record, tasks_digest

log = get_logger("awm_runtime.scheduler")

RERUNS = 1  # a lost episode runs once more elsewhere: an episode that kills its node must not kill them all
READY_TIMEOUT_S = 300.0  # placement, imports, worlds and preflight on every node
BEAT_S = 1.0
CALL_TIMEOUT_S = 10.0
FINISH_TIMEOUT_S = 60.0
INSTALL_HINT = "pip install 'awm-runtime[ray]' (the same version on the driver and every node)"


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(f"--ray needs Ray: {INSTALL_HINT}") from None
    return ray


def connect(ray: Any, address: str) -> bool:
    """Join the cluster at `address` unless this process already has; True if we connected (and so
    must disconnect). A wrong address fails at once: Ray itself would retry for minutes."""
    if ray.is_initialized():
        return False
    if address != "auto":
        host, _, port = address.rpartition(":") if ":" in address else (address, "", "6379")
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--ray {address}: no Ray cluster answers there ({exc.__class__.__name__}); start "
                              "one with `ray start --head`, or pass its head's host:port (or auto)") from None
    sigterm = signal.getsignal(signal.SIGTERM)  # ray.init replaces it with sys.exit; our graceful stop needs it
    try:
        ray.init(address=address, namespace="awm", log_to_driver=False, logging_level="ERROR")
    except ConnectionError as exc:
        raise ConfigError(f"--ray {address}: {exc}") from None
    finally:
        with contextlib.suppress(ValueError, TypeError):  # not the main thread
            signal.signal(signal.SIGTERM, sigterm)
    return True


@dataclass(slots=True)
class _Actor:
    index: int
    handle: Any
    capacity: int
    holder: str
    node: str
    ip: str = ""
    pid: int = 0
    load: int = 0  # episodes sent and not yet back
    alive: bool = True
    beat: dict[str, Any] = field(default_factory=dict)
    bye: dict[str, Any] = field(default_factory=dict)


class RayCluster:
    """The actors of one run on a Ray cluster, and the driver's link to them."""

    def __init__(self, ray: Any, config: RunConfig, events: EventStream, control: RunControl,
                 progress: RunProgress, owns_connection: bool) -> None:
        self.ray, self.config, self.events, self.control, self.progress = ray, config, events, control, progress
        self.owns_connection = owns_connection
        self.actors: list[_Actor] = []
        self.limits: Any = None
        self.nodes: list[dict[str, Any]] = []
        self.reruns = 0
        self.tool_sets: ToolSets = {}  # every actor's tool sets by id: records travel with their id only
        self._limits_view: list[EndpointStats] = []
        self._waiters: list[asyncio.Future[None]] = []
        self._background: list[asyncio.Task[None]] = []
        self._forgetting: list[asyncio.Task[None]] = []

    @classmethod
    async def start(cls, config: RunConfig, prep: PreparedRun, run_id: str, events: EventStream,
                    control: RunControl, progress: RunProgress) -> RayCluster:
        """Connect, start the limits actor and one actor per node share; every node checked before any episode."""
        assert config.ray is not None
        ray = import_ray()
        cluster = cls(ray, config, events, control, progress, connect(ray, config.ray))
        try:
            await cluster._start(prep, run_id)
        except BaseException:
            await must_finish(cluster._teardown())
            raise
        return cluster

    async def _start(self, prep: PreparedRun, run_id: str) -> None:
        ray, config = self.ray, self.config
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= 1]
        if not self.nodes:
            raise ConfigError(f"--ray {config.ray}: the cluster has no alive node with a CPU for episode actors")
        share = math.ceil(config.concurrency / len(self.nodes))
        placement = [(n, i) for n in self.nodes
                     for i in range(min(int(n["Resources"]["CPU"]), resolve_shards(config.shards, share,
                                                                                   int(n["Resources"]["CPU"]))))]
        placement = placement[:config.concurrency]
        here = ray.get_runtime_context().get_node_id()
        self.limits = ray.remote(LimitsService).options(
            name=f"awm-limits-{run_id[:12]}", num_cpus=0, max_concurrency=100_000, max_restarts=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False)).remote(limiter_specs())
        init = self._init(prep, run_id)
        remote_actor = ray.remote(EpisodeActor)
        for index, ((node, _), capacity) in enumerate(zip(placement, split(config.concurrency, len(placement)),
                                                          strict=True)):
            holder = f"{run_id[:12]}-{index}"
            handle = remote_actor.options(
                name=f"awm-episodes-{holder}", num_cpus=1, max_concurrency=capacity + 64, max_restarts=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
            ).remote({**init, "index": index, "capacity": capacity, "holder": holder, "limits": self.limits})
            self.actors.append(_Actor(index, handle, capacity, holder, node["NodeID"]))
        # One node makes the preflight's test completion; the others check keys and endpoints only.
        modes = [config.preflight] + [("quick" if config.preflight == "full" else config.preflight)] * len(placement)
        refs = [a.handle.ready.remote(modes[a.index]) for a in self.actors]
        try:
            async with asyncio.timeout(READY_TIMEOUT_S):
                replies = await asyncio.gather(*refs, return_exceptions=True)
        except TimeoutError:
            raise ConfigError(f"--ray: episode actors not ready after {READY_TIMEOUT_S:g}s (is a CPU free on every "
                              "node? `ray status` shows what the cluster can place)") from None
        for actor, reply in zip(self.actors, replies, strict=True):
            if node_gone(ray, reply):  # go on without it
                self._lose(actor, reply)
                continue
            if isinstance(reply, BaseException):
                raise ConfigError(f"--ray: an episode actor failed to start: {_first_line(reply)}")
            if "error" in reply:
                raise ConfigError(f"--ray: node {reply.get('ip') or actor.node[:12]}: {reply['error']}")
            actor.ip, actor.pid = reply["ip"], reply["pid"]
        live = [a for a in self.actors if a.alive]
        if not live:
            raise ConfigError(f"--ray {config.ray}: no episode actor started (their nodes died while starting)")
        if len(live) < len(self.actors):
            log.warning("ray_started_short", actors=len(live), planned=len(self.actors),
                        concurrency=sum(a.capacity for a in live))
        nodes = len({a.node for a in live})
        self.progress.shards = len(live)
        self.progress.where = f"Ray: {len(live)} actors on {nodes} nodes"
        self.progress.endpoints = self.endpoints
        log.info("ray_started", address=config.ray, nodes=nodes, driver_node=here, actors=[
            {"actor": a.index, "node": a.node, "ip": a.ip, "pid": a.pid, "capacity": a.capacity} for a in live])
        self._background = [asyncio.create_task(self._beats()), asyncio.create_task(self._relay_stop())]

    def _init(self, prep: PreparedRun, run_id: str) -> dict[str, Any]:
        """What every actor gets: settings and names of key variables, never a key."""
        from awm_runtime._version import __version__

        config = self.config
        worlds = config.worlds if config.worlds == "builtin" else str(Path(config.worlds).resolve())
        solutions = str(Path(config.solutions).resolve()) if config.solutions else None
        toml = Path(config.config_path).read_text(encoding="utf-8") if config.config_path else None
        node_config = config.model_copy(update={"ray": None, "out": None, "resume": False, "shards": 1,
                                                "exclude_trivial": False, "config_path": None, "worlds": worlds,
                                                "solutions": solutions})
        return {"config": node_config.model_dump(mode="json"), "config_toml": toml, "run_id": run_id,
                "grace_s": self.control.grace_s, "version": __version__,
                "tasks": [list(t.key) for t in prep.tasks], "digest": tasks_digest(prep.tasks)}

    # -- episodes ----------------------------------------------------------------------------------

    async def run_episode(self, spec: EpisodeSpec) -> EpisodeRecord:
        """Run one episode on the least busy live actor; a lost actor's episode runs once more elsewhere."""
        payload = spec.model_dump(mode="json")
        for attempt in range(RERUNS + 1):
            actor = await self._take()
            try:
                reply = await actor.handle.run.remote(payload)
            except self.ray.exceptions.RayActorError as exc:
                self._lose(actor, exc)
                continue
            except self.ray.exceptions.RayError as exc:  # not the actor's death: a bug or a lost object
                log.error("episode_remote_failed", actor=actor.index, attempt=attempt, key=list(spec.key),
                          error_class=type(exc).__name__, error=_first_line(exc))
                continue
            finally:
                self._give(actor)
            if reply["status"] == "done":
                record = parse_record(reply["lines"])
                self.tool_sets.update(reply.get("tools") or {})
                if record.tools_id is not None:  # so that the driver writes the set to tools.jsonl
                    record.tools = self.tool_sets.get(record.tools_id)
                return record
            if reply["status"] == "lost":  # the limits actor is gone: no call may go out unlimited, so stop
                if not self.control.stop_requested:
                    log.error("limits_actor_lost", actor=actor.index, note="the run stops; --resume continues it")
                self.control.stop("ray_limits_lost")
                raise WorkerLost(f"actor {actor.index} lost the run's limits actor")
            raise WorkerLost(f"actor {actor.index} stopped before running it", stopping=True)
        if self.control.stop_requested:
            raise WorkerLost("not run: the run is stopping", stopping=True)
        self.reruns += 1
        raise WorkerLost(f"lost {RERUNS + 1} times with the actor running it; --resume runs it again")

    async def _take(self) -> _Actor:
        while True:
            live = [a for a in self.actors if a.alive]
            if not live:
                raise WorkerLost("every episode actor of this run is lost", stopping=self.control.stop_requested)
            free = [a for a in live if a.load < a.capacity]
            if free:
                actor = min(free, key=lambda a: a.load / a.capacity)
                actor.load += 1
                return actor
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def _give(self, actor: _Actor) -> None:
        actor.load -= 1
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    def _lose(self, actor: _Actor, exc: BaseException) -> None:
        """An actor died (or its node did): no more work for it, its leases back, its episodes elsewhere."""
        if not actor.alive:
            return
        actor.alive = False
        log.error("actor_lost", actor=actor.index, node=actor.node, ip=actor.ip, pid=actor.pid, in_flight=actor.load,
                  error_class=type(exc).__name__, error=_first_line(exc),
                  note="its in-flight episodes run once more on another actor, or are left for --resume")
        with contextlib.suppress(Exception):
            self.ray.kill(actor.handle, no_restart=True)
        self._forgetting.append(asyncio.get_running_loop().create_task(self._forget(actor)))
        self._wake()
        if not any(a.alive for a in self.actors):
            self.control.stop("ray_actors_lost")

    async def _forget(self, actor: _Actor) -> None:
        """Its calls in flight died with it: their slots return to the cluster now, not at lease expiry."""
        try:
            returned = await asyncio.wait_for(self.limits.forget.remote(actor.holder), CALL_TIMEOUT_S)
        except (TimeoutError, self.ray.exceptions.RayError) as exc:
            log.warning("actor_leases_not_returned", actor=actor.index, error=_first_line(exc),
                        note="they lapse when the actor's lease expires")
            return
        log.info("actor_leases_returned", actor=actor.index, leases=returned)

    # -- live state --------------------------------------------------------------------------------

    def endpoints(self) -> list[EndpointStats]:
        """Cluster-wide: limit, in flight and queue from the limits actor; backoff summed over actors."""
        backoff: dict[str, int] = {}
        for a in self.actors:
            for e in a.beat.get("endpoints", []) if a.alive else []:
                backoff[e["endpoint"]] = backoff.get(e["endpoint"], 0) + e["in_backoff"]
        return [replace(s, in_backoff=backoff.get(s.endpoint, 0)) for s in self._limits_view]

    async def _beats(self) -> None:
        while True:
            await asyncio.sleep(BEAT_S)
            await self._beat_once()

    async def _beat_once(self) -> None:
        live = [a for a in self.actors if a.alive]
        refs = [a.handle.beat.remote() for a in live]
        for actor, ref in zip(live, refs, strict=True):
            try:
                beat = await asyncio.wait_for(ref, CALL_TIMEOUT_S)
            except self.ray.exceptions.RayActorError as exc:
                self._lose(actor, exc)
                continue
            except (TimeoutError, self.ray.exceptions.RayError):
                continue
            await asyncio.to_thread(self.events.append_lines, beat.pop("events", b""))
            actor.beat = beat
        with contextlib.suppress(TimeoutError, self.ray.exceptions.RayError):
            self._limits_view = await asyncio.wait_for(self.limits.snapshot.remote(), CALL_TIMEOUT_S)

    async def _relay_stop(self) -> None:
        await self.control.stopping.wait()
        for a in self.actors:
            if a.alive:
                a.handle.stop.remote(self.control.grace_s)
        await self.control.hard.wait()
        for a in self.actors:
            if a.alive:
                a.handle.stop.remote(0.0, True)

    # -- the end -----------------------------------------------------------------------------------

    async def close(self) -> dict[str, Any]:
        """Finish every actor (their last events land in events.jsonl), then free the cluster."""
        for t in self._background:
            t.cancel()
        live = [a for a in self.actors if a.alive]
        refs = [a.handle.finish.remote() for a in live]
        for actor, ref in zip(live, refs, strict=True):
            try:
                bye = await asyncio.wait_for(ref, FINISH_TIMEOUT_S + self.control.grace_s)
            except (TimeoutError, self.ray.exceptions.RayError) as exc:
                log.warning("actor_finish_failed", actor=actor.index, error_class=type(exc).__name__,
                            error=_first_line(exc))
                continue
            await asyncio.to_thread(self.events.append_lines, bye.pop("events", b""))
            actor.bye = bye
            self.progress.cancelled += int(bye.get("cancelled", 0))
        if self._forgetting:
            await asyncio.wait(self._forgetting, timeout=CALL_TIMEOUT_S)
        limits: dict[str, Any] = {}
        with contextlib.suppress(Exception):
            limits = await asyncio.wait_for(self.limits.stats.remote(), CALL_TIMEOUT_S)
        await self._teardown()
        stats = [{"actor": a.index, "node": a.node, "ip": a.ip, "pid": a.pid, "capacity": a.capacity,
                  "lost": not a.alive, **a.bye} for a in self.actors]
        log.info("ray_finished", actors=len(self.actors), lost=sum(not a.alive for a in self.actors),
                 reruns_failed=self.reruns, leases_lapsed=limits.get("lapsed", 0))
        return {"ray": {"address": self.config.ray, "nodes": len({a.node for a in self.actors}),
                        "actors": stats, "limits": limits}}

    async def _teardown(self) -> None:
        for a in self.actors:
            with contextlib.suppress(Exception):
                self.ray.kill(a.handle, no_restart=True)
        if self.limits is not None:
            with contextlib.suppress(Exception):
                self.ray.kill(self.limits, no_restart=True)
        if self.owns_connection:
            self.ray.shutdown()


def node_gone(ray: Any, reply: Any) -> bool:
    """Whether an actor's start failed because its node is gone: the actor died with its node, or its node can
    no longer take it. A node that was just lost can still be listed alive for a while (its death is noticed
    after missed health checks), and an actor pinned to it then cannot be placed: `ActorUnschedulableError`,
    which is the node's end, not a fault of the run's settings."""
    return isinstance(reply, (ray.exceptions.RayActorError, ray.exceptions.ActorUnschedulableError))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:300]
