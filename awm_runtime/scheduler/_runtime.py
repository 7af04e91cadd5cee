"""Runtime: prepares a run (worlds, models, arms), then streams its episodes through N workers.

Each episode is isolated: any failure becomes that episode's record; siblings keep running.
Records are appended to episodes.jsonl as they finish, and statistics are kept as running
aggregates, so memory stays flat however long the run.
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
from typing import Any, Protocol

import structlog

from awm_runtime._build import BuildContext, build_expert, build_nudges, build_policy, build_shaper
from awm_runtime._config import RunConfig
from awm_runtime._errors import AwmError, ConfigError
from awm_runtime._events import EpisodeEnded
from awm_runtime._protocols import Sink
from awm_runtime._types import EpisodeRecord, EpisodeSpec, ErrorInfo, Task
from awm_runtime.episode import EpisodeLimits, ExpertBudget, Harness, run_episode
from awm_runtime.logs import (
    EVENTS,
    MANIFEST,
    SUMMARY,
    EventLogSink,
    RunDirWriter,
    completed_keys,
    configure_logging,
    iter_records,
    record_line,
    repair_tail,
)
from awm_runtime.models import apply_routes, load_registry, preflight, shutdown, start_shards
from awm_runtime.report import RunStats
from awm_runtime.scheduler._plan import plan_episodes, select_tasks
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


Finalize = Callable[[list[EpisodeRecord]], list[EpisodeRecord]]
EpisodeRunner = Callable[[EpisodeSpec], Awaitable[EpisodeRecord]]
Play = Callable[[list[EpisodeSpec], EpisodeRunner], Awaitable[list[EpisodeRecord]]]


@dataclass(slots=True)
class Unit:
    """Episodes that finish together: one episode, or a GRPO group whose records are finalised
    (e.g. advantages written) before any of them is appended to episodes.jsonl.

    `play` decides how the unit's episodes run (default: all at once); a group uses it to re-run
    a member that failed for infrastructure reasons. Each `run_one(spec)` opens a fresh world.
    """

    specs: list[EpisodeSpec]
    finalize: Finalize | None = None
    play: Play | None = None

    @property
    def keys(self) -> list[tuple[str, str, int, int]]:
        return [s.key for s in self.specs]

    async def run(self, run_one: EpisodeRunner) -> list[EpisodeRecord]:
        if self.play is not None:
            records = await self.play(self.specs, run_one)
        else:
            records = list(await asyncio.gather(*(run_one(s) for s in self.specs)))
        return self.finalize(records) if self.finalize is not None else records


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


async def prepare(config: RunConfig) -> PreparedRun:
    """Resolve everything a run needs and check it, so bad input fails before any episode."""
    registry = apply_routes(load_registry(config.config_path), config.model_dump())
    world = load_worlds(config.worlds, solutions=config.solutions, options=world_options(config))
    try:
        return await _prepare(config, registry, world)
    except BaseException:
        await asyncio.shield(world.aclose())
        raise


async def _prepare(config: RunConfig, registry: Any, world: AwmWorld) -> PreparedRun:
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
        await preflight(roles, mode=config.preflight)
    except BaseException:
        await shutdown()
        raise
    secrets = [s for _, cfg in roles if cfg.api_key_env and (s := os.environ.get(cfg.api_key_env, ""))]
    return PreparedRun(config, world, tasks, harnesses, ctx, secrets, planner)


def _out_dir(config: RunConfig, run_id: str) -> Path:
    if config.out is not None:
        out = Path(config.out)
    else:
        out = Path("runs") / f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{run_id[:6]}"
    has_records = (out / "episodes.jsonl").is_file() and (out / "episodes.jsonl").stat().st_size > 0
    if config.resume and not (out / MANIFEST).is_file():
        raise ConfigError(f"--resume: {out} holds no run to resume (no {MANIFEST}); pass the --out of the killed run")
    if has_records and not config.resume:
        raise ConfigError(f"{out} already holds a run; pass --resume to continue it, or choose another --out")
    return out


async def run(config: RunConfig, *, sinks: Sequence[Sink] = (), prepared: PreparedRun | None = None,
              on_start: Callable[[int, int], None] | None = None) -> RunResult:
    """Run every planned episode not already recorded; return the run's summary."""
    prep = prepared or await prepare(config)
    run_id = uuid.uuid4().hex
    out = _out_dir(config, run_id)
    writer = RunDirWriter(out)
    stats = RunStats()
    done: set[tuple[str, str, int, int]] = set()
    if config.resume:
        repair_tail(out)
        done = completed_keys(out)
        for r in iter_records(out):
            stats.add(r)
            if prep.planner is not None:
                prep.planner.observe(r)
    to_run = prep.remaining(done)
    if on_start:
        on_start(prep.planned, len(done))
    events = (out / EVENTS).open("a", encoding="utf-8", buffering=1 << 16)
    configure_logging(events, secrets=prep.secrets)
    writer.write_json(MANIFEST, {
        "run_id": run_id, "resumed": config.resume, "started_at": datetime.now(UTC).isoformat(),
        "config": config.model_dump(mode="json"), "versions": _versions(), "seed": config.seed,
        "argv": sys.argv, "worlds": prep.world.name, "planned_episodes": prep.planned,
        "arms": {n: {"policy": h.policy.ref.model_dump(), "expert": h.expert.ref.model_dump() if h.expert else None}
                 for n, h in prep.harnesses.items()},
    })
    all_sinks: list[Sink] = [EventLogSink(), *sinks]
    tasks_by_key = {t.key: t for t in prep.tasks}
    log.info("run_started", run_id=run_id, planned=prep.planned, already_done=len(done), to_run=to_run,
             concurrency=config.concurrency, out=str(out))
    started = time.perf_counter()
    slots = asyncio.Semaphore(config.concurrency)

    async def episode(spec: EpisodeSpec) -> EpisodeRecord:
        async with slots:
            return await _one(spec, tasks_by_key[(spec.scenario, spec.task_idx)], prep, all_sinks, run_id)

    async def worker(queue: Iterator[Unit]) -> None:
        for unit in queue:
            records = await unit.run(episode)
            lines = b"".join(record_line(r) for r in records)
            await asyncio.shield(asyncio.to_thread(writer.append, lines))
            for record in records:
                stats.add(record)

    try:
        for stage in prep.stages():
            units = [u for u in stage if not all(k in done for k in u.keys)]
            queue = iter(units)
            async with asyncio.TaskGroup() as tg:
                for _ in range(min(config.concurrency, len(units))):
                    tg.create_task(worker(queue))
    finally:
        summary = {"run_id": run_id, "out": str(out), "wall_s": round(time.perf_counter() - started, 3),
                   **stats.to_dict(), **({"groups": prep.planner.summary()} if prep.planner else {})}
        writer.write_json(SUMMARY, summary)
        log.info("run_finished", run_id=run_id, episodes=stats.episodes, wall_s=summary["wall_s"])
        writer.close()
        events.flush()
        events.close()
        await asyncio.shield(prep.world.aclose())
        await shutdown()
    return RunResult(run_id, out, summary, prep.planned, to_run, len(done))


async def _one(spec: EpisodeSpec, task: Task, prep: PreparedRun, sinks: Sequence[Sink], run_id: str) -> EpisodeRecord:
    """The capture site: whatever happens, one record comes back."""
    harness = prep.harness_for(spec)
    episode_id = uuid.uuid4().hex[:16]
    try:
        session = await prep.world.open(task, episode_id=episode_id)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        record = error_record(spec, task, harness, exc, episode_id=episode_id, run_id=run_id)
        for sink in sinks:
            sink.emit(EpisodeEnded(episode_id, record))
        return record
    try:
        return await run_episode(spec, task, session, harness, sinks=sinks, run_id=run_id, episode_id=episode_id)
    finally:
        await asyncio.shield(session.close())


def error_record(spec: EpisodeSpec, task: Task, harness: Harness, exc: BaseException, *, episode_id: str,
                 run_id: str) -> EpisodeRecord:
    """A record for an episode that could not start (e.g. its world failed to load)."""
    cls = exc.error_class if isinstance(exc, AwmError) else f"Unexpected.{type(exc).__name__}"
    record = EpisodeRecord(
        episode_id=episode_id, run_id=run_id, arm=spec.arm, scenario=spec.scenario, task_idx=spec.task_idx,
        repeat=spec.repeat, seed=spec.seed, task=task.text, policy=harness.policy.ref,
        expert=harness.expert.ref if harness.expert else None, outcome="error", verdict="not_run",
        error=ErrorInfo(error_class=cls, message=str(exc)), group_id=spec.group_id,
    )
    record.reward, record.reward_components = harness.shaper.shape(record)
    return record
