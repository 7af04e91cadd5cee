"""Runtime: prepares a run (worlds, models, arms), then streams its episodes through a pool.

Each episode is isolated: any failure becomes that episode's record; siblings keep running.
Records are appended to episodes.jsonl as they finish (the one writer is this process, also when
the run is sharded over worker processes), and statistics are running aggregates, so memory stays
flat however long the run. Resume is a set difference over episode keys.
"""

from __future__ import annotations

import asyncio
import os
import platform
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import IO, Any, Protocol

import structlog

from awm_runtime._build import BuildContext, build_expert, build_nudges, build_policy, build_shaper
from awm_runtime._config import RunConfig
from awm_runtime._errors import ConfigError
from awm_runtime._protocols import Sink
from awm_runtime._types import EpisodeRecord, EpisodeSpec, Task
from awm_runtime.episode import EpisodeLimits, ExpertBudget, Harness
from awm_runtime.logs import (
    EPISODES,
    EVENTS,
    MANIFEST,
    SUMMARY,
    EventLogSink,
    EventStream,
    RunDirWriter,
    configure_logging,
    iter_records,
    read_manifest,
    record_line,
    repair_tail,
)
from awm_runtime.models import ModelRegistry, apply_routes, load_registry, preflight, shutdown, start_shards
from awm_runtime.models._transport import IN_PROCESS
from awm_runtime.scheduler._control import LoopLag, RunControl, must_finish, peak_rss_mib, rss_mib
from awm_runtime.scheduler._plan import plan_episodes, select_tasks
from awm_runtime.scheduler._pool import EpisodePool
from awm_runtime.scheduler._progress import RunProgress, endpoint_dicts
from awm_runtime.scheduler._shards import resolve_shards, run_sharded, split
from awm_runtime.verifiers import Judge
from awm_runtime.worlds import AwmWorld, load_split, load_worlds, trivial_tasks, world_options

log = structlog.get_logger("awm_runtime.scheduler")


@dataclass(slots=True)
class RunResult:
    run_id: str
    out: Path
    summary: dict[str, Any]
    planned: int
    ran: int
    skipped: int
    not_run: int = 0
    interrupted: bool = False


Finalize = Callable[[list[EpisodeRecord]], list[EpisodeRecord]]
EpisodeRunner = Callable[[EpisodeSpec], Awaitable[EpisodeRecord]]
Play = Callable[[list[EpisodeSpec], EpisodeRunner], Awaitable[list[EpisodeRecord]]]


@dataclass(slots=True)
class Unit:
    """Episodes that finish together: one episode, or a GRPO group whose records are finalised
    (e.g. advantages written) before any of them is appended to episodes.jsonl.

    `play` decides how the unit's episodes run (default: all at once, see scheduler/_pool.py); a group
    uses it to re-run a member that failed for infrastructure reasons. Each run of a spec opens a
    fresh world.
    """

    specs: list[EpisodeSpec]
    finalize: Finalize | None = None
    play: Play | None = None

    @property
    def keys(self) -> list[tuple[str, str, int, int]]:
        return [s.key for s in self.specs]


class Planner(Protocol):
    """Plans a run in stages: stage k+1 is drawn only after stage k has finished (adaptive groups)."""

    @property
    def planned(self) -> int: ...

    def observe(self, record: dict[str, Any]) -> None:
        """A record already in the run directory (resume)."""

    def stages(self) -> Iterator[Iterable[Unit]]: ...

    def summary(self) -> dict[str, Any]: ...


@dataclass(slots=True)
class PreparedRun:
    config: RunConfig
    world: AwmWorld
    tasks: list[Task]
    harnesses: dict[str, Harness]
    ctx: BuildContext
    secrets: list[str] = field(default_factory=list)
    planner: Planner | None = None

    @property
    def planned(self) -> int:
        if self.planner is not None:
            return self.planner.planned
        return len(self.tasks) * len(self.harnesses) * self.config.repeats

    def specs(self) -> Iterator[EpisodeSpec]:
        return plan_episodes(self.tasks, self.config.arm_list(), repeats=self.config.repeats, seed=self.config.seed)

    def units(self) -> Iterator[Unit]:
        """The run as units; without groups, every episode is its own unit."""
        return (Unit([spec]) for spec in self.specs())

    def stages(self) -> Iterator[Iterable[Unit]]:
        """Units in stages; without a planner the whole run is one stage."""
        return self.planner.stages() if self.planner is not None else iter([self.units()])

    def remaining(self, done: set[tuple[str, str, int, int]]) -> int:
        if self.planner is not None:
            return max(0, self.planner.planned - len(done))
        return sum(1 for s in self.specs() if s.key not in done)

    def harness_for(self, spec: EpisodeSpec) -> Harness:
        """The arm's harness; a solo group member runs it without the expert."""
        harness = self.harnesses[spec.arm]
        return harness if spec.with_expert or harness.expert is None else replace(harness, expert=None)


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("awm-runtime", "litellm", "openai", "httpx", "pydantic", "structlog", "fastapi", "sqlalchemy"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    return out


async def prepare(config: RunConfig, *, check: bool = True, shard: tuple[int, int] = (0, 1)) -> PreparedRun:
    """Resolve everything a run needs and check it, so bad input fails before any episode.

    A shard passes `check=False` (its parent ran the preflight) and `shard=(index, count)`: it
    gets its part of every endpoint's limits, so the shards together keep to what awm.toml allows."""
    registry = share_limits(apply_routes(load_registry(config.config_path), config.model_dump()), *shard)
    world = load_worlds(config.worlds, solutions=config.solutions, options=world_options(config))
    try:
        return await _prepare(config, registry, world, check)
    except BaseException:
        await asyncio.shield(world.aclose())
        raise


async def _prepare(config: RunConfig, registry: Any, world: AwmWorld, check: bool) -> PreparedRun:
    split = None if config.split == "all" else load_split(world)[config.split]
    tasks = select_tasks(world.tasks(), scenarios=config.scenarios, task_spec=config.tasks, split=split)
    if not tasks:
        raise ConfigError(f"no tasks match --scenarios {config.scenarios!r} --tasks {config.tasks!r} "
                          f"--split {config.split} in {world.name} ({len(world.tasks())} tasks loaded)")
    if config.verifier == "sql" and not config.judge:
        raise ConfigError("--verifier sql needs --judge ALIAS: the model that classifies each episode")
    if config.exclude_trivial:
        trivial = await trivial_tasks(world, tasks)
        tasks = [t for t in tasks if t.key not in trivial]
        if not tasks:
            raise ConfigError(f"--exclude-trivial: all {len(trivial)} selected tasks already pass with no actions")
    ctx = BuildContext(registry=registry, world=world, options={"tool_result_chars": config.tool_result_chars,
                                                                "judge": config.judge,
                                                                "expert_criteria": config.expert_criteria})
    if config.verifier == "sql" and config.judge:
        world.judge = Judge(ctx.client(config.judge, "judge"), name=config.judge)
    harnesses: dict[str, Harness] = {}
    for arm in config.arm_list():
        c = config.for_arm(arm)
        ctx.options.update(protocol=c.protocol, enable_thinking=c.enable_thinking)
        harnesses[arm.name] = Harness(
            policy=build_policy(c.policy, ctx),
            expert=build_expert(c.expert, ctx),
            nudges=build_nudges(c.nudges),
            shaper=build_shaper(c.reward),
            limits=EpisodeLimits(
                max_turns=c.max_turns, timeout_s=c.episode_timeout_s, on_format_error=c.on_format_error,
                expert_budget=ExpertBudget(calls=c.expert_calls, tokens=c.expert_tokens, usd=c.expert_usd)),
        )
    if config.judge:
        ctx.client(config.judge, "judge")  # plug-ins that judge use this client; preflight checks it now
    planner = None
    if config.group_size is not None or config.expert_ratio is not None:
        from awm_runtime.groups import GroupPlanner

        planner = GroupPlanner.from_config(config, tasks, harnesses)
    roles = [(role, client.config) for (role, _alias), client in ctx.clients.items()]
    try:
        await start_shards(config.model_procs, [cfg for _, cfg in roles])
        if check:
            await preflight(roles, mode=config.preflight)
    except BaseException:
        await shutdown()
        raise
    if any(client.transport is IN_PROCESS for client in ctx.clients.values()):
        # litellm takes seconds to import: do it off the loop now, not inside the first episode's model call.
        from awm_runtime.models._litellm import litellm

        await asyncio.to_thread(litellm)
    secrets = [s for _, cfg in roles if cfg.api_key_env and (s := os.environ.get(cfg.api_key_env, ""))]
    return PreparedRun(config, world, tasks, harnesses, ctx, secrets, planner)


def share_limits(registry: ModelRegistry, index: int, count: int) -> ModelRegistry:
    """Shard `index` of `count`: its part of every alias's concurrency and rate limits (at least 1 each)."""
    if count <= 1:
        return registry

    def part(limit: int | None) -> int | None:
        return None if limit is None else max(1, split(limit, count)[index])

    for alias in registry.names():
        c = registry.get(alias)
        registry = registry.with_overrides(alias, max_concurrency=part(c.max_concurrency), rpm=part(c.rpm),
                                           tpm=part(c.tpm))
    return registry


def _out_dir(config: RunConfig) -> tuple[Path, dict[str, Any] | None]:
    """The run directory, and the manifest of the run being resumed (None for a new run)."""
    if config.out is not None:
        out = Path(config.out)
    else:
        out = Path("runs") / f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    has_records = (out / EPISODES).is_file() and (out / EPISODES).stat().st_size > 0
    if config.resume and not (out / MANIFEST).is_file():
        raise ConfigError(f"--resume: {out} holds no run to resume (no {MANIFEST}); pass the --out of the killed run")
    if has_records and not config.resume:
        raise ConfigError(f"{out} already holds a run; pass --resume to continue it, or choose another --out")
    if not config.resume:
        return out, None
    try:
        return out, read_manifest(out)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--resume: {out / MANIFEST} is unreadable ({exc}); the run cannot be resumed") from None


def _manifest(config: RunConfig, prep: PreparedRun, run_id: str, shards: int,
              previous: dict[str, Any] | None) -> dict[str, Any]:
    session = {"started_at": datetime.now(UTC).isoformat(), "argv": sys.argv, "resumed": config.resume,
               "shards": shards, "concurrency": config.concurrency, "pid": os.getpid()}
    return {
        "run_id": run_id, "resumed": config.resume, "started_at": (previous or {}).get("started_at")
        or session["started_at"], "config": config.model_dump(mode="json"), "versions": _versions(),
        "seed": config.seed, "argv": sys.argv, "worlds": prep.world.name, "planned_episodes": prep.planned,
        "arms": {n: {"policy": h.policy.ref.model_dump(), "expert": h.expert.ref.model_dump() if h.expert else None}
                 for n, h in prep.harnesses.items()},
        "host": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "sessions": [*(previous or {}).get("sessions", []), session],
    }


async def run(config: RunConfig, *, sinks: Sequence[Sink] = (), prepared: PreparedRun | None = None,
              on_start: Callable[[int, int], None] | None = None, control: RunControl | None = None,
              progress: RunProgress | None = None, log_stdout: IO[str] | None = None) -> RunResult:
    """Run every planned episode not already recorded; return the run's summary.

    `control` stops the run early (signals, tests); `progress` is the live state a view reads;
    `log_stdout` also receives every event line. Cancelling the task that runs this cancels the
    in-flight episodes (not recorded), and still flushes the logs and writes summary.json."""
    prep = prepared or await prepare(config)
    out, previous = _out_dir(config)
    run_id = str(previous["run_id"]) if previous and previous.get("run_id") else uuid.uuid4().hex
    if prep.planner is not None and config.shards not in ("auto", 1):
        raise ConfigError("--group-size runs in one process (groups are planned stage by stage and finalised "
                          "together): use --shards 1")
    shards = 1 if prep.planner is not None else resolve_shards(config.shards, config.concurrency)
    if shards > 1 and sinks:
        raise ConfigError("custom sinks see the episodes of their own process only: use --shards 1 with sinks")
    control = control or RunControl(config.grace_s)
    progress = progress or RunProgress()
    writer = RunDirWriter(out)
    done: set[tuple[str, str, int, int]] = set()
    if config.resume:
        repair_tail(out)
        for r in iter_records(out):
            done.add((r["arm"], r["scenario"], int(r["task_idx"]), int(r["repeat"])))
            progress.stats.add(r)
            if prep.planner is not None:
                prep.planner.observe(r)
    to_run = prep.remaining(done)
    progress.planned, progress.already_done, progress.shards = prep.planned, len(done), shards
    if on_start:
        on_start(prep.planned, len(done))
    events = EventStream(out / EVENTS, also=log_stdout)
    saved_logging = structlog.get_config()
    configure_logging(events, secrets=prep.secrets)
    writer.write_json(MANIFEST, _manifest(config, prep, run_id, shards, previous))
    log.info("run_started", run_id=run_id, planned=prep.planned, already_done=len(done), to_run=to_run,
             concurrency=config.concurrency, shards=shards, grace_s=control.grace_s, out=str(out))
    started = time.perf_counter()
    lag = LoopLag()
    background = [asyncio.create_task(lag.run()), asyncio.create_task(_heartbeat(events, progress, lag))]
    outcome: dict[str, Any] = {}

    async def record(unit: Unit, records: list[EpisodeRecord]) -> None:
        fresh = [r for r in records if (r.arm, r.scenario, r.task_idx, r.repeat) not in done]
        await asyncio.to_thread(lambda: writer.append(b"".join(record_line(r) for r in fresh)))
        for r in fresh:
            progress.stats.add(r)
        progress.recorded += len(fresh)

    try:
        for stage in prep.stages():  # a stage is planned only after the one before it has finished
            units = (u for u in stage if not all(k in done for k in u.keys))
            if shards > 1:
                outcome = await run_sharded(config, prep, run_id, out, shards, units, control, progress, writer,
                                            done)
            else:
                outcome = await run_local(config, prep, run_id, [EventLogSink(), *sinks], units, control,
                                          progress, record)
            if control.stop_requested:
                break
    finally:
        for t in background:
            t.cancel()
        summary = {"run_id": run_id, "out": str(out), "wall_s": round(time.perf_counter() - started, 3),
                   "planned": prep.planned, "already_done": len(done), "recorded": progress.recorded,
                   "not_run": prep.planned - len(done) - progress.recorded, "cancelled": progress.cancelled,
                   "interrupted": control.stop_requested, "stop_reason": control.reason, "shards": shards,
                   "concurrency": config.concurrency, "loop_lag_ms": lag.to_dict(), "peak_rss_mib":
                   round(peak_rss_mib(), 1), **outcome, **progress.stats.to_dict(),
                   **({"groups": prep.planner.summary()} if prep.planner else {})}
        writer.write_json(SUMMARY, summary)
        log.info("run_finished", run_id=run_id, episodes=progress.stats.episodes, recorded=progress.recorded,
                 not_run=summary["not_run"], cancelled=progress.cancelled, interrupted=control.stop_requested,
                 wall_s=summary["wall_s"], loop_lag_p99_ms=summary["loop_lag_ms"]["p99_ms"])
        events.close()
        structlog.configure(**saved_logging)
        writer.close()
        await must_finish(prep.world.aclose())
        await must_finish(shutdown())
    return RunResult(run_id, out, summary, prep.planned, progress.recorded, len(done), summary["not_run"],
                     control.stop_requested)


async def run_local(config: RunConfig, prep: PreparedRun, run_id: str, sinks: Sequence[Sink],
                    units: Iterator[Unit], control: RunControl, progress: RunProgress,
                    record: Callable[[Unit, list[EpisodeRecord]], Awaitable[None]]) -> dict[str, Any]:
    """The whole run in this process's event loop."""
    pool = EpisodePool(prep, run_id=run_id, sinks=sinks, concurrency=config.concurrency, control=control)

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
    return {}


async def _heartbeat(events: EventStream, progress: RunProgress, lag: LoopLag, every_s: float = 10.0) -> None:
    """Flush events every second; every `every_s`, log a `run_progress` event for scripts and post-mortems."""
    beats = 0
    while True:
        await asyncio.sleep(1.0)
        beats += 1
        if beats % int(every_s) == 0:
            log.info("run_progress", finished=progress.finished, planned=progress.planned,
                     in_flight=progress.in_flight, loop_lag_p99_ms=lag.percentile(0.99),
                     rss_mib=round(rss_mib(), 1), endpoints=endpoint_dicts(progress.endpoints()))
        await asyncio.to_thread(events.flush)
