"""The episode pool: streams units through workers under a global episode limit, isolated and stoppable.

One pool runs in each process of a run (the only one, or each shard). Every episode is isolated:
whatever fails becomes that episode's record and its siblings keep running. A stop request ends
the intake of units; in-flight units get the grace period, then are cancelled and not recorded.
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from awm_runtime._config import ARM_KEYS
from awm_runtime._errors import WorkerLost
from awm_runtime._events import EpisodeEnded
from awm_runtime._gc import tuned_collector
from awm_runtime._interfaces import Sink, WorldSession
from awm_runtime._log import get_logger
from awm_runtime._malloc import steady_malloc
from awm_runtime._slices import LoopSlices, loop_slice, sharing_loop
from awm_runtime._types import EpisodeKey, EpisodeRecord, EpisodeSpec, ErrorInfo, Task, WorkerRef
from awm_runtime.episode import Checkpointer, EpisodeHook, Harness, ending_for, error_info, run_episode, wrap_session
from awm_runtime.scheduler._admission import endpoint_gates, gate_semaphores
from awm_runtime.scheduler._control import RunControl, must_finish

if TYPE_CHECKING:
    from awm_runtime._units import EpisodeRunner, Unit
    from awm_runtime.scheduler._prepare import PreparedRun

log = get_logger("awm_runtime.scheduler")

NextUnit = Callable[[], Awaitable["Unit | None"]]
UnitDone = Callable[["Unit", list[EpisodeRecord]], Awaitable[None]]


class EpisodePool:
    """Runs units from `next_unit` with at most `concurrency` episodes in flight; hands each
    finished unit's records to `done` (awaited to the end even under cancellation)."""

    def __init__(self, prep: PreparedRun, *, run_id: str, sinks: Sequence[Sink], concurrency: int,
                 control: RunControl, worker: WorkerRef | None = None, runner: EpisodeRunner | None = None) -> None:
        self.prep = prep
        self.worker = worker or WorkerRef(host=socket.gethostname(), pid=os.getpid())  # stamped on every record
        # Runs one episode elsewhere (a Ray actor) instead of here; its records say who ran them.
        self.runner = runner
        self.lost = 0  # episodes whose process died (WorkerLost): not recorded
        self.run_id = run_id
        self.sinks = list(sinks)
        self.concurrency = concurrency
        self.control = control
        self.in_flight = 0
        self.cancelled = 0  # episodes cancelled in flight (not recorded)
        self.unrecorded: list[EpisodeKey] = []  # finished, but no record could be written
        self._slots = asyncio.Semaphore(concurrency)
        self.slices = LoopSlices()
        # Episodes of an arm whose endpoint cannot serve `concurrency` at once wait here, before they start.
        self.gates = endpoint_gates(prep.harnesses, concurrency)
        self._gates = gate_semaphores(self.gates)
        for gate in {g.endpoint: g for g in self.gates.values()}.values():
            log.info("episodes_gated", endpoint=gate.endpoint, slots=gate.slots, episodes=gate.episodes,
                     arms=list(gate.arms), concurrency=concurrency)
        self._tasks = {t.key: t for t in prep.tasks}

    async def run(self, next_unit: NextUnit, done: UnitDone) -> None:
        """Run the units `next_unit` hands out, `concurrency` episodes at a time, and pass each unit's
        records to `done`; return when the units run out or the run stops."""
        # Thousands of episodes in flight (awm_runtime/_gc.py), sharing the loop in slices (awm_runtime/_slices.py);
        # for hours, on a heap that does not creep (awm_runtime/_malloc.py).
        steady_malloc()
        with tuned_collector(), sharing_loop(self.slices):
            await self._run(next_unit, done)

    async def _run(self, next_unit: NextUnit, done: UnitDone) -> None:
        workers = [asyncio.create_task(self._worker(next_unit, done), name=f"awm-worker-{i}")
                   for i in range(self.concurrency)]
        everything: asyncio.Future[Any] = asyncio.gather(*workers, return_exceptions=True)
        try:
            grace: asyncio.Future[object] = asyncio.ensure_future(self.control.wait_grace_over())
            try:
                await asyncio.wait([everything, grace], return_when=asyncio.FIRST_COMPLETED)
            finally:
                grace.cancel()
            if not everything.done():
                log.warning("run_cancelling", in_flight=self.in_flight, grace_s=self.control.grace_s)
        finally:
            for w in workers:
                w.cancel()
            results = await must_finish(everything)
            for r in results:
                if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError):
                    log.error("worker_crashed", error_class=type(r).__name__, error=str(r))

    async def _worker(self, next_unit: NextUnit, done: UnitDone) -> None:
        while not self.control.stop_requested:
            unit = await next_unit()
            if unit is None or self.control.stop_requested:
                return
            try:
                records = await self._run_unit(unit)
            except WorkerLost as exc:  # not recorded: --resume runs the unit again
                if not exc.stopping:
                    self.lost += len(unit.specs)
                    log.warning("unit_lost", episodes=len(unit.specs), keys=[list(k) for k in unit.keys],
                                error=str(exc))
                continue
            except Exception as exc:  # a bug guard: every record is made in `one`; nothing may end the worker
                log.error("unit_failed", error_class=type(exc).__name__, error=str(exc), episodes=len(unit.specs))
                records = [self._bare_error(s, exc, "UnitError", "the episode's unit failed") for s in unit.specs]
            await self._finish(unit, records, done)

    async def _finish(self, unit: Unit, records: list[EpisodeRecord], done: UnitDone) -> None:
        """Hand a unit's records to `done`. If that fails (a record no writer could take), the unit is
        recorded again as bare `error` records that say why; if even those fail, its keys are
        `unrecorded` (the run then exits non-zero naming them). The worker goes on either way."""
        try:
            await must_finish(done(unit, records))
            return
        except Exception as exc:
            log.error("record_failed", error_class=type(exc).__name__, error=str(exc)[:500],
                      keys=[list(r.key) for r in records])
            bare = [self._bare_error(spec, exc, "RecordError", "the episode finished but its record could not be "
                                     "written", failed=r) for spec, r in zip(unit.specs, records, strict=False)]
        try:
            await must_finish(done(unit, bare))
        except Exception as exc:
            self.unrecorded.extend(unit.keys)
            log.error("episodes_unrecorded", error_class=type(exc).__name__, error=str(exc)[:500],
                      keys=[list(k) for k in unit.keys])

    def _bare_error(self, spec: EpisodeSpec, exc: BaseException, kind: str, why: str,
                    failed: EpisodeRecord | None = None) -> EpisodeRecord:
        """The `error` record of an episode whose own record could not be made or written."""
        task = self._tasks[(spec.scenario, spec.task_idx)]
        record = error_record(spec, task, self.prep.harness_for(spec), exc, run_id=self.run_id,
                              episode_id=failed.episode_id if failed is not None else uuid.uuid4().hex[:16])
        record.error = ErrorInfo(error_class=f"{kind}.{type(exc).__name__}", message=f"{why}: {exc}"[:2000])
        record.end_reason = "runtime_error"
        record.worker = self.worker
        return record

    async def _run_unit(self, unit: Unit) -> list[EpisodeRecord]:
        if unit.play is not None:  # e.g. a group that re-runs a member that failed for infrastructure reasons
            records = await unit.play(unit.specs, self._episode)
        else:
            records = list(await asyncio.gather(*(self._episode(s) for s in unit.specs)))
        if unit.finalize is None:
            return records
        try:
            return unit.finalize(records)
        except Exception as exc:  # a broken group finaliser fails its group's records, nothing else
            log.error("finalize_failed", error_class=type(exc).__name__, error=str(exc), episodes=len(records))
            for r in records:
                r.outcome, r.end_reason = "error", "runtime_error"
                r.error = ErrorInfo(error_class=f"FinalizeError.{type(exc).__name__}", message=str(exc))
            return records

    async def _episode(self, spec: EpisodeSpec) -> EpisodeRecord:
        gate = self._gates.get(spec.arm)
        if gate is None:
            return await self._admitted(spec)
        async with gate:
            return await self._admitted(spec)

    async def _admitted(self, spec: EpisodeSpec) -> EpisodeRecord:
        async with self._slots:
            self.in_flight += 1
            try:
                if self.runner is not None:
                    return await self.runner(spec)
                record = await self.one(spec)
                record.worker = self.worker
                return record
            finally:
                self.in_flight -= 1

    async def one(self, spec: EpisodeSpec) -> EpisodeRecord:
        """The capture site: whatever happens, one record comes back (or the cancellation)."""
        task = self._tasks[(spec.scenario, spec.task_idx)]
        harness = self.prep.harness_for(spec)
        episode_id = uuid.uuid4().hex[:16]
        try:
            hook = self._hook(spec)
            session = wrap_session(await self.prep.world.open(task, episode_id=episode_id), hook)
        except asyncio.CancelledError:
            self._cancelled(spec, episode_id, "world_open")
            raise
        except Exception as exc:
            log.error("world_open_failed", episode_id=episode_id, scenario=spec.scenario, task_idx=spec.task_idx,
                      arm=spec.arm, error_class=type(exc).__name__, error=str(exc))
            record = error_record(spec, task, harness, exc, episode_id=episode_id, run_id=self.run_id)
            for sink in self.sinks:
                sink.emit(EpisodeEnded(episode_id, record))
            return record
        try:
            await loop_slice()  # episodes whose worlds opened together (after a build) share the loop from the start
            return await run_episode(spec, task, session, harness, sinks=self.sinks, run_id=self.run_id,
                                     episode_id=episode_id, hook=hook)
        except asyncio.CancelledError:
            self._cancelled(spec, episode_id, "episode")
            raise
        except Exception as exc:  # run_episode records its own failures; this is a bug guard
            log.error("episode_crashed", episode_id=episode_id, error_class=type(exc).__name__, error=str(exc))
            return error_record(spec, task, harness, exc, episode_id=episode_id, run_id=self.run_id)
        finally:
            await must_finish(_close(session, episode_id))

    def _hook(self, spec: EpisodeSpec) -> EpisodeHook | None:
        """Checkpoints (--checkpoint), a fork, or the resume of an episode killed mid-way (docs/forks.md)."""
        config = self.prep.config
        checkpointer = None
        fresh = spec.fork is None or spec.fork.mode == "resume"  # forks save no checkpoints of their own
        if config.checkpoint != "none" and self.prep.checkpoint_root is not None and fresh:
            arm = next((a for a in config.arm_list() if a.name == spec.arm), None)
            resolved = config.for_arm(arm) if arm is not None else config
            definition = {"name": spec.arm, **resolved.model_dump(mode="json", include=set(ARM_KEYS))}
            checkpointer = Checkpointer(self.prep.checkpoint_root, config.checkpoint, definition)
        fork = spec.fork
        if checkpointer is None and fork is None:
            return None
        if fork is not None and fork.mode == "resume":
            log.info("episode_resumed", arm=spec.arm, scenario=spec.scenario, task_idx=spec.task_idx,
                     repeat=spec.repeat, checkpoint=fork.checkpoint)
        return EpisodeHook(checkpointer=checkpointer, fork=fork)

    def _cancelled(self, spec: EpisodeSpec, episode_id: str, stage: str) -> None:
        """An in-flight episode stopped by cancellation: not recorded, so `--resume` runs it again."""
        self.cancelled += 1
        log.info("episode_cancelled", episode_id=episode_id, arm=spec.arm, scenario=spec.scenario,
                 task_idx=spec.task_idx, repeat=spec.repeat, stage=stage)


async def _close(session: WorldSession, episode_id: str) -> None:
    try:
        await session.close()
    except Exception as exc:  # a session that fails to close must not take its record with it
        log.error("session_close_failed", episode_id=episode_id, error_class=type(exc).__name__, error=str(exc))


def error_record(spec: EpisodeSpec, task: Task, harness: Harness, exc: BaseException, *, episode_id: str,
                 run_id: str) -> EpisodeRecord:
    """A record for an episode that could not start (e.g. its world failed to load)."""
    ending = ending_for(exc)
    record = EpisodeRecord(
        episode_id=episode_id, run_id=run_id, arm=spec.arm, scenario=spec.scenario, task_idx=spec.task_idx,
        repeat=spec.repeat, seed=spec.seed, task=task.text, policy=harness.policy.ref,
        expert=harness.expert.ref if harness.expert else None, outcome="error",
        end_reason=ending.reason if ending.error is not None else "runtime_error", verdict="not_run",
        error=ending.error or error_info(exc), group_id=spec.group_id,
    )
    record.reward, record.reward_components = harness.shaper.shape(record)
    return record
