"""Where a prepared run's episodes run: one Backend, chosen once per run.

In this process's event loop, in episode processes on this machine (`--shards N`), or in Ray actors
(`--ray`). Whichever it is, this process plans the units, feeds them, and writes the run directory;
the backend only turns units into records.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from awm_runtime._config import RunConfig
from awm_runtime._interfaces import Sink
from awm_runtime._types import EpisodeKey, EpisodeRecord
from awm_runtime._units import EpisodeRunner, Unit
from awm_runtime.logs import EventLogSink, EventStream, RunDirWriter
from awm_runtime.scheduler._control import RunControl, must_finish
from awm_runtime.scheduler._episode_pool import EpisodePool
from awm_runtime.scheduler._launch import Launch
from awm_runtime.scheduler._prepare import PreparedRun
from awm_runtime.scheduler._processes import run_sharded
from awm_runtime.scheduler._progress import RunProgress

if TYPE_CHECKING:
    from awm_runtime.scheduler._ray import RayCluster

Record = Callable[[Unit, list[EpisodeRecord]], Awaitable[None]]


class Backend(Protocol):
    """Runs the units of a prepared run and hands their records back; the run's own process writes them."""

    @property
    def shards(self) -> int:
        """How many processes (or Ray actors) run episodes, as summary.json reports it."""
        ...

    async def start(self) -> None:
        """Get ready to run episodes (start and check a cluster); a failure here is before any episode."""
        ...

    async def run_stage(self, units: Iterator[Unit]) -> dict[str, Any]:
        """Run every unit `units` yields, until it is exhausted or the run is stopped; what the stage adds to
        the summary."""
        ...

    async def close(self) -> dict[str, Any]:
        """Release what `start` took; what that adds to the summary. Called once, also after a failure."""
        ...


@dataclass(slots=True)
class Run:
    """What every backend shares: the prepared run and how it was launched, the stop control, the live
    progress, and how a finished unit's records are written."""

    prep: PreparedRun
    launch: Launch
    control: RunControl
    progress: RunProgress
    record: Record

    @property
    def config(self) -> RunConfig:
        """The run's one config."""
        return self.prep.config

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.launch.run_id


@dataclass(slots=True)
class InProcess:
    """Episodes in this process's event loop, with the run's sinks."""

    run: Run
    sinks: Sequence[Sink] = ()
    shards: int = 1

    async def start(self) -> None:
        """Nothing to start."""

    async def run_stage(self, units: Iterator[Unit]) -> dict[str, Any]:
        """The stage's units through one EpisodePool here."""
        r = self.run
        return await run_local(r.config, r.prep, r.run_id, [EventLogSink(), *self.sinks], units, r.control,
                               r.progress, r.record)

    async def close(self) -> dict[str, Any]:
        """Nothing to release."""
        return {}


@dataclass(slots=True)
class Sharded:
    """Episodes in `shards` episode processes on this machine; this process writes what they send."""

    run: Run
    shards: int
    out: Path
    writer: RunDirWriter
    done: set[EpisodeKey]

    async def start(self) -> None:
        """The processes start with each stage."""

    async def run_stage(self, units: Iterator[Unit]) -> dict[str, Any]:
        """The stage's units fed to the shard processes."""
        r = self.run
        return await run_sharded(r.config, r.prep, r.run_id, self.out, self.shards, units, r.control, r.progress,
                                 self.writer, self.done)

    async def close(self) -> dict[str, Any]:
        """The processes ended with their stage."""
        return {}


@dataclass(slots=True)
class OnRay:
    """Episodes in Ray actors: this process plans, feeds and records; the actors run the episodes."""

    run: Run
    events: EventStream
    shards: int
    cluster: RayCluster | None = field(default=None)

    async def start(self) -> None:
        """Connect to the cluster and start its actors; every node is checked before any episode."""
        from awm_runtime.scheduler._ray import RayCluster

        r = self.run
        self.cluster = await RayCluster.start(r.config, r.prep, r.run_id, self.events, r.control, r.progress)
        self.shards = r.progress.shards

    async def run_stage(self, units: Iterator[Unit]) -> dict[str, Any]:
        """The stage's units, each episode run by an actor."""
        assert self.cluster is not None
        r = self.run
        return await run_local(r.config, r.prep, r.run_id, [], units, r.control, r.progress, r.record,
                               runner=self.cluster.run_episode)

    async def close(self) -> dict[str, Any]:
        """Stop the actors (what they report joins the summary)."""
        return await must_finish(self.cluster.close()) if self.cluster is not None else {}


def choose_backend(run: Run, *, writer: RunDirWriter, done: set[EpisodeKey], events: EventStream) -> Backend:
    """The one backend of a run: Ray when it names a cluster, episode processes for more than one shard, else
    this process."""
    launch = run.launch
    if run.config.ray:
        return OnRay(run, events, launch.shards)
    if launch.shards > 1:
        return Sharded(run, launch.shards, launch.out, writer, done)
    return InProcess(run, launch.sinks, launch.shards)


async def run_local(config: RunConfig, prep: PreparedRun, run_id: str, sinks: Sequence[Sink],
                    units: Iterator[Unit], control: RunControl, progress: RunProgress, record: Record,
                    runner: EpisodeRunner | None = None) -> dict[str, Any]:
    """The whole run in this process's event loop (each episode run by `runner` when given: a Ray actor)."""
    pool = EpisodePool(prep, run_id=run_id, sinks=sinks, concurrency=config.concurrency, control=control,
                       runner=runner)

    async def next_unit() -> Unit | None:
        return next(units, None)

    async def track() -> None:
        while True:
            progress.in_flight, progress.stopping = pool.in_flight, control.stop_requested
            await asyncio.sleep(0.2)

    tracker = asyncio.create_task(track())
    try:
        await pool.run(next_unit, record)
    finally:
        tracker.cancel()
        progress.in_flight, progress.cancelled = pool.in_flight, pool.cancelled
        progress.lost += pool.lost
    return {"loop_slices": pool.slices.to_dict()} if runner is None else {}
