"""Executing a prepared run: stream its episodes through a pool, write the run directory, summarise.

Each episode is isolated: any failure becomes that episode's record; siblings keep running.
Records are appended to episodes.jsonl as they finish (the one writer is this process, also when
the run is sharded over episode processes), and statistics are running aggregates, so memory stays
flat however long the run. Resume is a set difference over episode keys.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import structlog

from awm_runtime._log import get_logger
from awm_runtime._types import EpisodeKey, EpisodeRecord
from awm_runtime._units import Unit
from awm_runtime.logs import (
    EVENTS,
    MANIFEST,
    SUMMARY,
    EventStream,
    RunDirFull,
    RunDirWriter,
    configure_logging,
    iter_records,
    new_tool_sets,
    record_line,
    repair_tail,
)
from awm_runtime.models import shutdown
from awm_runtime.report import RunStats, apply_stopping
from awm_runtime.scheduler._backend import Run, choose_backend
from awm_runtime.scheduler._control import LoopLag, RunControl, must_finish, peak_rss_mib, rss_mib
from awm_runtime.scheduler._decide import PairWatch, WatchedStats, endpoint_totals
from awm_runtime.scheduler._forks import in_flight, resumable
from awm_runtime.scheduler._manifest import manifest
from awm_runtime.scheduler._prepare import PreparedRun
from awm_runtime.scheduler._progress import RunProgress, endpoint_dicts

log = get_logger("awm_runtime.scheduler")


@dataclass(slots=True)
class RunResult:
    """What a finished (or stopped) run did: its id and directory, the summary written to summary.json, and
    how many planned episodes ran, were skipped (already recorded), were not run, or have no record."""

    run_id: str
    out: Path
    summary: dict[str, Any]
    planned: int
    ran: int
    skipped: int
    not_run: int = 0
    interrupted: bool = False
    unrecorded: int = 0  # planned episodes neither recorded nor cancelled although the run was not stopped


async def execute(prep: PreparedRun, *, on_start: Callable[[int, int], None] | None = None,
                  control: RunControl | None = None, progress: RunProgress | None = None,
                  log_stdout: IO[str] | None = None) -> RunResult:
    """Run every planned episode of a prepared run not already recorded; return the run's summary.

    The executor: `prep` is what `prepare` resolved and checked (its one config, its `launch`), and
    nothing here checks it again. `control` stops the run early (signals, tests); `progress` is the live
    state a view reads; `log_stdout` also receives every event line. Cancelling the task that runs this
    cancels the in-flight episodes (not recorded), and still flushes the logs and writes summary.json."""
    launch = prep.launch
    if launch is None:
        raise TypeError("run a PreparedRun that prepare() or ready() launched (a shard's has no run directory)")
    config, out, run_id = prep.config, launch.out, launch.run_id
    arms = [a.name for a in config.arm_list()]
    control = control or RunControl(config.grace_s)
    progress = progress or RunProgress()
    writer = RunDirWriter(out)
    watch: PairWatch | None = None
    if launch.stopping is not None:
        watch = PairWatch(arms, launch.stopping, control, max_episodes=config.max_episodes, max_usd=config.max_usd)
        progress.stats = WatchedStats(arms, watch)
    elif not progress.stats.episodes:
        # tables and differences in --arm order; a plain run of one arm pairs nothing (forks and groups plan arms)
        progress.stats = RunStats(arms, pairs=len(arms) > 1 or prep.planner is not None)
    done: set[EpisodeKey] = set()
    recorded: set[str] = set()
    if launch.previous is not None:  # a resumed run: what its sessions recorded, and the episodes left in flight
        repair_tail(out)
        for r in iter_records(out):
            done.add((r["arm"], r["scenario"], int(r["task_idx"]), int(r["repeat"])))
            recorded.add(str(r.get("episode_id")))
            progress.stats.add(r)
            if prep.planner is not None:
                prep.planner.observe(r)
        if prep.checkpoint_root is not None:
            prep.resume_from = await asyncio.to_thread(in_flight, prep.checkpoint_root, recorded, done)
    to_run = prep.remaining(done)
    progress.planned, progress.already_done, progress.shards = prep.planned, len(done), launch.shards
    if on_start:
        on_start(prep.planned, len(done))
    events = EventStream(out / EVENTS, also=log_stdout)
    saved_logging = structlog.get_config()
    configure_logging(events, secrets=prep.secrets, on_warning=progress.warn)
    writer.write_json(MANIFEST, manifest(prep))

    def disk_full(exc: RunDirFull) -> None:  # called once, from a writer thread
        log.error("run_dir_full", error=str(exc), note="the run stops; every record written so far is intact")
        loop.call_soon_threadsafe(control.stop, f"disk full: {exc}")

    loop = asyncio.get_running_loop()
    writer.on_full = disk_full
    log.info("run_started", run_id=run_id, planned=prep.planned, already_done=len(done), to_run=to_run,
             resumed_mid_episode=len(prep.resume_from),
             concurrency=config.concurrency, shards=launch.shards, grace_s=control.grace_s, out=str(out),
             containment=prep.containment.statement)
    started = time.perf_counter()
    lag = LoopLag()
    background = [asyncio.create_task(lag.run()), asyncio.create_task(_heartbeat(events, progress, lag))]
    outcome: dict[str, Any] = {}

    # Keys of the units planned so far, for groups only (they plan as they go); other runs' keys are the plan's,
    # enumerated again if some go missing: a set of every key would grow with the run (issue 49).
    handed: set[EpisodeKey] = set()

    def remember(units: Iterator[Unit]) -> Iterator[Unit]:
        if prep.planner is None:
            yield from units
            return
        for u in units:
            handed.update(u.keys)
            yield u

    def write(fresh: list[EpisodeRecord]) -> bool:
        # A set's line lands before any record naming it; the writer skips the sets it has written already.
        return writer.add_tools(new_tool_sets(fresh, set())) and writer.append(b"".join(record_line(r) for r in fresh))

    async def record(unit: Unit, records: list[EpisodeRecord]) -> None:
        fresh = [r for r in records if (r.arm, r.scenario, r.task_idx, r.repeat) not in done]
        if not await asyncio.to_thread(write, fresh):  # a full disk: not recorded, the run is stopping
            return
        for r in fresh:
            progress.stats.add(r)
        progress.recorded += len(fresh)

    backend = choose_backend(Run(prep, launch, control, progress, record), writer=writer, done=done, events=events)
    try:
        await backend.start()
        for stage in prep.stages():  # a stage is planned only after the one before it has finished
            units: Iterator[Unit] = remember(resumable(u, prep.resume_from) for u in stage
                                             if not all(k in done for k in u.keys))
            if watch is not None:
                units = watch.capped(units, len(done))
            outcome = await backend.run_stage(units)
            if control.stop_requested:
                break
    finally:
        outcome = {**outcome, **await backend.close()}
        for t in background:
            t.cancel()
        stopped_early = control.stop_requested and (watch is None or watch.reason != control.reason)
        summary = run_summary(prep, time.perf_counter() - started, done, progress, control, stopped_early,
                              backend.shards, lag, outcome, watch)
        planned_stop = watch is not None and watch.reason is not None  # a decision or a budget ended the feed
        if summary["not_run"] > 0 and not control.stop_requested and not planned_stop:
            missing = await must_finish(asyncio.to_thread(_unrecorded, out, prep, handed))
            summary.update(unrecorded_count=len(missing), unrecorded=[list(k) for k in missing[:UNRECORDED_SHOWN]])
            log.error("episodes_unrecorded", count=len(missing), keys=summary["unrecorded"],
                      note="planned episodes that were neither recorded nor cancelled; --resume runs them")
        events.flush()
        if events.dropped:  # a full disk cost events.jsonl lines (logs/_setup.py): said, never silent
            summary["events_dropped"] = events.dropped
        try:
            writer.write_json(SUMMARY, summary)
        except RunDirFull as exc:  # the summary is recomputed from the records by awm-report and --resume
            log.error("summary_not_written", error=str(exc))
        log.info("run_finished", run_id=run_id, episodes=progress.stats.episodes, recorded=progress.recorded,
                 not_run=summary["not_run"], cancelled=progress.cancelled, interrupted=control.stop_requested,
                 wall_s=summary["wall_s"], loop_lag_p99_ms=summary["loop_lag_ms"]["p99_ms"])
        events.close()
        structlog.configure(**saved_logging)
        writer.close()
        await must_finish(prep.world.aclose())
        await must_finish(shutdown())
    return RunResult(run_id, out, summary, prep.planned, progress.recorded, len(done), summary["not_run"],
                     stopped_early, int(summary.get("unrecorded_count", 0)))


UNRECORDED_SHOWN = 100


def run_summary(prep: PreparedRun, wall_s: float, done: set[EpisodeKey], progress: RunProgress, control: RunControl,
                stopped_early: bool, shards: int, lag: LoopLag, outcome: dict[str, Any],
                watch: PairWatch | None) -> dict[str, Any]:
    """summary.json of a run whose episodes have stopped (before the check for unrecorded episodes)."""
    assert prep.launch is not None
    summary = {"run_id": prep.launch.run_id, "out": str(prep.launch.out), "wall_s": round(wall_s, 3),
               "planned": prep.planned, "already_done": len(done), "recorded": progress.recorded,
               "not_run": prep.planned - len(done) - progress.recorded, "cancelled": progress.cancelled,
               **({"lost": progress.lost} if progress.lost else {}),
               "interrupted": stopped_early, "stop_reason": control.reason, "shards": shards,
               "concurrency": prep.config.concurrency, "loop_lag_ms": lag.to_dict(), "peak_rss_mib":
               round(peak_rss_mib(), 1), **outcome, **progress.stats.to_dict(),
               **({getattr(prep.planner, "summary_key", "groups"): prep.planner.summary()}
                  if prep.planner else {}),
               **({"sequential": watch.summary(not control.stop_requested)} if watch else {}),
               **({"endpoints": endpoint_totals(progress.endpoints())} if progress.recorded else {})}
    apply_stopping(summary, summary.get("sequential"))  # the sequential result leads; fixed-sample p's go
    warnings = judge_warnings(summary)
    if warnings:
        summary["warnings"] = warnings
    return summary
UNCLASSIFIED_WARN_SHARE = 0.10


def judge_warnings(summary: dict[str, Any]) -> list[str]:
    """A warning per arm whose SQL judge left more than 10% of its episodes unclassified: those are the
    agent's `incomplete` (judge_unclassified), so a broken judge must still show."""
    out = []
    for name, arm in (summary.get("arms") or {}).items():
        share = arm.get("judge_unclassified_share")
        if share is not None and share > UNCLASSIFIED_WARN_SHARE:
            out.append(f"arm {name}: the judge gave no classification for {share:.0%} of its judged episodes "
                       f"(end_reason judge_unclassified, counted as incomplete); check the judge model")
            log.warning("judge_unclassified_share_high", arm=name, share=share, threshold=UNCLASSIFIED_WARN_SHARE)
    return out


def _unrecorded(out: Path, prep: PreparedRun, handed: set[EpisodeKey]) -> list[EpisodeKey]:
    """The planned keys episodes.jsonl lacks (read back only when the counts say some are missing). Groups
    are planned stage by stage, so for them the keys are those of the units planned so far."""
    recorded = {(r["arm"], r["scenario"], int(r["task_idx"]), int(r["repeat"])) for r in iter_records(out)}
    planned = handed if prep.planner is not None else (s.key for s in prep.specs())
    return sorted(k for k in planned if k not in recorded)


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
