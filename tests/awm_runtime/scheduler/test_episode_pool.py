"""The episode pool: isolation, stop with grace, cancellation mid-episode, group finalisers."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awm_runtime._types import EpisodeRecord
from awm_runtime.scheduler import PreparedRun, RunControl, RunProgress, Unit, run
from tests.awm_runtime.scheduler.conftest import MemoryWorld, StepPolicy, prepared


def lines(out: Path) -> list[dict[str, Any]]:
    raw = (out / "episodes.jsonl").read_bytes()
    assert raw == b"" or raw.endswith(b"\n")
    return [json.loads(x) for x in raw.splitlines()]


def events(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]


async def test_eight_concurrent_episodes_one_raises_gives_eight_records_one_error(tmp_path: Path) -> None:
    world = MemoryWorld(8)
    policy = StepPolicy(steps=2, delay_s=0.05, raise_on={5})
    prep = prepared(tmp_path / "run", world, policy, concurrency=8)
    result = await run(prep)
    recs = lines(result.out)
    assert len(recs) == 8 and len({r["task_idx"] for r in recs}) == 8
    errors = [r for r in recs if r["outcome"] == "error"]
    assert len(errors) == 1 and errors[0]["error"]["class"] == "Unexpected.RuntimeError"
    assert all(r["outcome"] == "complete" for r in recs if r is not errors[0])
    assert world.opened == world.closed == 8
    assert result.summary["recorded"] == 8 and result.summary["not_run"] == 0


async def test_world_that_fails_to_open_or_close_costs_one_record_each(tmp_path: Path) -> None:
    world = MemoryWorld(8, fail_open={2}, fail_close={5})
    prep = prepared(tmp_path / "run", world, StepPolicy(), concurrency=8)
    result = await run(prep)
    recs = {r["task_idx"]: r for r in lines(result.out)}
    assert len(recs) == 8
    assert recs[2]["outcome"] == "error" and recs[2]["verdict"] == "not_run"
    assert recs[5]["outcome"] == "complete"  # its record survives a failing close
    names = [e["event"] for e in events(result.out)]
    assert "world_open_failed" in names and "session_close_failed" in names


async def _started(progress_world: MemoryWorld, n: int) -> None:
    async with asyncio.timeout(20):
        while progress_world.opened < n:  # noqa: ASYNC110 - polling a plug-in counter
            await asyncio.sleep(0.01)


async def test_cancelling_a_run_mid_episode_records_nothing_partial_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    world = MemoryWorld(8)
    prep = prepared(out, world, StepPolicy(steps=3, delay_s=0.5), concurrency=4)
    task = asyncio.create_task(run(prep))
    await _started(world, 4)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert world.opened == world.closed  # every session closed, through the cancellation
    assert lines(out) == []  # nothing finished, nothing (partial) recorded
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cancelled"] == 4 and summary["not_run"] == 8
    names = [e["event"] for e in events(out)]
    assert names.count("episode_cancelled") == 4 and names[-1] == "run_finished"

    world2 = MemoryWorld(8)
    prep2 = prepared(out, world2, StepPolicy(), concurrency=4, resume=True)
    result = await run(prep2)
    assert sorted(r["task_idx"] for r in lines(out)) == list(range(8))
    assert result.summary["not_run"] == 0


async def stopped(tmp_path: Path, n: int, policy: StepPolicy, concurrency: int, grace_s: float,
                  stops: int = 1) -> tuple[Any, MemoryWorld, RunProgress]:
    """Start a run, stop it (`stops` times) once `concurrency` episodes are in flight, and finish it."""
    world = MemoryWorld(n)
    prep = prepared(tmp_path / "run", world, policy, concurrency=concurrency)
    control, progress = RunControl(grace_s=grace_s), RunProgress()
    task = asyncio.create_task(run(prep, control=control, progress=progress))
    await _started(world, concurrency)
    for _ in range(stops):
        control.stop("SIGINT")
    async with asyncio.timeout(60):
        return await task, world, progress


async def test_stop_lets_in_flight_episodes_finish_within_grace_and_starts_no_more(tmp_path: Path) -> None:
    result, world, _ = await stopped(tmp_path, 8, StepPolicy(steps=1, delay_s=0.3), concurrency=3, grace_s=30)
    assert result.interrupted and result.summary["stop_reason"] == "SIGINT"
    assert result.ran == 3 and result.not_run == 5 and result.summary["cancelled"] == 0
    assert world.opened == 3


async def test_grace_over_cancels_in_flight_episodes_unrecorded(tmp_path: Path) -> None:
    result, world, progress = await stopped(tmp_path, 8, StepPolicy(steps=50, delay_s=0.2), concurrency=3,
                                            grace_s=0.3)
    assert result.ran == 0 and result.summary["cancelled"] == 3 and result.not_run == 8
    assert world.opened == world.closed == 3
    assert progress.cancelled == 3


async def test_second_stop_cancels_at_once(tmp_path: Path) -> None:
    result, _, _ = await stopped(tmp_path, 4, StepPolicy(steps=50, delay_s=0.2), concurrency=2, grace_s=600,
                                 stops=2)
    assert result.summary["cancelled"] == 2


async def test_group_units_are_finalised_before_append_and_a_failing_finaliser_fails_its_group(
        tmp_path: Path) -> None:
    world = MemoryWorld(4)
    prep = prepared(tmp_path / "run", world, StepPolicy(), concurrency=4)

    def advantages(records: list[EpisodeRecord]) -> list[EpisodeRecord]:
        for r in records:
            r.reward_components["advantage"] = 0.5
        return records

    def broken(records: list[EpisodeRecord]) -> list[EpisodeRecord]:
        raise ValueError("bad group")

    class Grouped(PreparedRun):
        def units(self) -> Iterator[Unit]:
            specs = list(self.specs())
            return iter([Unit(specs[:2], advantages), Unit(specs[2:], broken)])

    grouped = Grouped(prep.config, prep.world, prep.tasks, prep.harnesses, prep.ctx)
    result = await run(grouped)
    recs = {r["task_idx"]: r for r in lines(result.out)}
    assert len(recs) == 4
    assert recs[0]["reward_components"]["advantage"] == 0.5 and recs[1]["outcome"] == "complete"
    assert recs[2]["outcome"] == recs[3]["outcome"] == "error"
    assert recs[2]["error"]["class"] == "FinalizeError.ValueError"


async def test_a_runner_runs_episodes_elsewhere_and_a_lost_one_is_left_for_resume(tmp_path: Path) -> None:
    """The seam the Ray executor uses: records come from the runner as they are; WorkerLost records nothing."""
    from awm_runtime._errors import WorkerLost
    from awm_runtime._types import WorkerRef
    from awm_runtime.scheduler import EpisodePool

    world = MemoryWorld(6)
    prep = prepared(tmp_path / "run", world, StepPolicy(), concurrency=3)
    local = EpisodePool(prep, run_id="r", sinks=[], concurrency=1, control=RunControl())
    elsewhere = WorkerRef(node="node-b", host="10.0.0.2", pid=4242)

    async def runner(spec: Any) -> EpisodeRecord:
        if spec.task_idx == 2:
            raise WorkerLost("its actor died, twice")
        if spec.task_idx == 4:
            raise WorkerLost("not run: stopping", stopping=True)
        record = await local.one(spec)
        record.worker = elsewhere
        return record

    pool = EpisodePool(prep, run_id="r", sinks=[], concurrency=3, control=RunControl(), runner=runner)
    units = iter(prep.units())
    done: list[EpisodeRecord] = []

    async def next_unit() -> Unit | None:
        return next(units, None)

    async def record(unit: Unit, records: list[EpisodeRecord]) -> None:
        done.extend(records)

    await pool.run(next_unit, record)
    assert sorted(r.task_idx for r in done) == [0, 1, 3, 5]
    assert all(r.worker == elsewhere for r in done)  # the runner's worker, not this process
    assert pool.lost == 1  # the stopping one is not a loss


async def test_local_records_say_which_process_ran_them(tmp_path: Path) -> None:
    import os

    prep = prepared(tmp_path / "run", MemoryWorld(2), StepPolicy(), concurrency=2)
    result = await run(prep)
    recs = lines(result.out)
    assert all(r["worker"]["pid"] == os.getpid() and r["worker"]["node"] is None and r["worker"]["host"]
               for r in recs)


class EchoingSession:
    """A session whose tool result and verdict echo a lone surrogate (as an expert or a judge may)."""

    def __init__(self, world: Any, task: Any) -> None:
        from awm_runtime import ToolSpec

        self.world, self.task, self.tools = world, task, (ToolSpec(name="noop"),)

    async def call_tool(self, call: Any) -> Any:
        from awm_runtime._types import ToolResult

        return ToolResult(text="echo \ud800")

    async def verify(self, final_answer: str, messages: Any) -> Any:
        from awm_runtime._types import Verdict

        if self.task.task_idx == 3:  # a verdict no writer can take: its record is written as a bare error
            return Verdict(result="complete", mode="none", detail={"obj": object()})
        return Verdict(result="complete", mode="none", detail={"reason": "said \udc00"})

    async def close(self) -> None:
        self.world.closed += 1


class EchoingWorld(MemoryWorld):
    async def open(self, task: Any, *, episode_id: str) -> Any:
        self.opened += 1
        return EchoingSession(self, task)


async def test_records_with_echoed_surrogates_or_unwritable_parts_are_never_lost(tmp_path: Path) -> None:
    world = EchoingWorld(6)
    prep = prepared(tmp_path / "run", world, StepPolicy(steps=1), concurrency=1)
    result = await run(prep)
    recs = {r["task_idx"]: r for r in lines(result.out)}
    assert sorted(recs) == list(range(6)) and result.unrecorded == 0 and result.summary["not_run"] == 0
    for i, r in recs.items():
        if i == 3:
            assert r["outcome"] == "error" and r["end_reason"] == "runtime_error"
            assert r["error"]["class"].startswith("RecordError.") and "could not be written" in r["error"]["message"]
        else:
            assert r["outcome"] == "complete" and r["replaced_chars"] == 2
            assert r["verdict_detail"]["returned"]["reason"] == "said \ufffd"
    names = [e["event"] for e in events(result.out)]
    assert names.count("record_failed") == 1 and "worker_crashed" not in names


async def test_a_unit_that_cannot_be_recorded_at_all_is_named_and_the_worker_goes_on(tmp_path: Path) -> None:
    from awm_runtime.scheduler._episode_pool import EpisodePool

    prep = prepared(tmp_path / "run", MemoryWorld(4), StepPolicy(), concurrency=1)
    pool = EpisodePool(prep, run_id="r", sinks=[], concurrency=1, control=RunControl(1.0))
    units = iter(Unit([s]) for s in prep.specs())
    written: list[tuple[str, str, int, int]] = []

    async def next_unit() -> Unit | None:
        return next(units, None)

    async def done(unit: Unit, records: list[EpisodeRecord]) -> None:
        if unit.specs[0].task_idx == 1:
            raise OSError("disk full")  # every attempt: its key must be named, not silently dropped
        written.extend(r.key for r in records)

    await pool.run(next_unit, done)
    assert sorted(k[2] for k in written) == [0, 2, 3]
    assert [k[2] for k in pool.unrecorded] == [1]


async def test_a_full_disk_under_the_tool_sets_ends_the_run_cleanly(tmp_path: Path) -> None:
    """tools.jsonl on a full disk (/dev/full): the first unit's tool set cannot be written, so neither can its
    records; the run stops there (issue 51: a full disk ends the run, it does not write records around it)."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "tools.jsonl").symlink_to("/dev/full")
    prep = prepared(out, MemoryWorld(3), StepPolicy(), concurrency=1)
    result = await run(prep)
    assert lines(out) == [] and result.unrecorded == 0 and result.interrupted
    assert result.summary["stop_reason"].startswith("disk full: ") and "No space left on device" in \
        result.summary["stop_reason"]


def test_unrecorded_keys_are_named_from_the_plan(tmp_path: Path) -> None:
    from awm_runtime.scheduler._run import _unrecorded, judge_warnings

    out = tmp_path / "run"
    out.mkdir()
    prep = prepared(out, MemoryWorld(3), StepPolicy())
    (out / "episodes.jsonl").write_text(json.dumps({"arm": "main", "scenario": "mem", "task_idx": 1, "repeat": 0})
                                        + "\n")
    assert _unrecorded(out, prep, set()) == [("main", "mem", 0, 0), ("main", "mem", 2, 0)]
    arms = {"a": {"judge_unclassified_share": 0.5}, "b": {"judge_unclassified_share": 0.1}, "c": {}}
    warnings = judge_warnings({"arms": arms})
    assert len(warnings) == 1 and warnings[0].startswith("arm a: the judge gave no classification for 50%")


async def test_episodes_that_queue_for_every_loop_slice_all_finish_or_close_when_cancelled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from awm_runtime import _slices
    from awm_runtime.scheduler import _episode_pool

    made: list[_slices.LoopSlices] = []

    def no_time_to_spare() -> _slices.LoopSlices:  # a slice lasts nothing: every step that can queue does
        made.append(_slices.LoopSlices(slice_s=0.0))
        return made[-1]

    monkeypatch.setattr(_episode_pool, "LoopSlices", no_time_to_spare)
    world = MemoryWorld(8)
    prep = prepared(tmp_path / "a", world, StepPolicy(steps=3), concurrency=8)
    result = await run(prep)
    assert result.ran == 8 and made[-1].waited > 0

    world = MemoryWorld(8)
    prep = prepared(tmp_path / "b", world, StepPolicy(steps=3, delay_s=0.5), concurrency=4)
    task = asyncio.create_task(run(prep))
    await _started(world, 4)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert world.opened == world.closed  # closed through the cancellation, wherever each one waited


async def test_a_full_disk_ends_the_run_cleanly_with_every_record_whole_and_resume_finishes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 51: ENOSPC at the run directory's writer, injected after a few records: the run stops (it
    does not crash or tear a line), what was recorded stays whole, and --resume runs the rest once."""
    import errno

    from awm_runtime.logs import RunDirWriter

    out = tmp_path / "run"
    size = [0]
    real = os.write

    def full_after_three_records(fd: int, data: Any) -> int:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if path.endswith("episodes.jsonl"):
            size[0] += 1
            if size[0] > 3:
                half = max(1, len(data) // 2)  # the first write lands half, the next one fails
                if size[0] == 4:
                    return real(fd, bytes(data[:half]))
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(RunDirWriter, "write", staticmethod(full_after_three_records))
    world = MemoryWorld(12)
    prep = prepared(out, world, StepPolicy(steps=1), concurrency=1)
    result = await run(prep)
    recs = lines(out)  # every line whole: none torn
    assert len(recs) == 3 and result.summary["recorded"] == 3 and result.interrupted
    assert result.summary["stop_reason"].startswith("disk full: ")
    assert "No space left on device" in result.summary["stop_reason"]
    assert world.opened == world.closed
    names = [e["event"] for e in events(out)]
    assert names.count("run_dir_full") == 1
    monkeypatch.undo()  # space freed
    prep2 = prepared(out, MemoryWorld(12), StepPolicy(steps=1), concurrency=1, resume=True)
    result = await run(prep2)
    assert sorted(r["task_idx"] for r in lines(out)) == list(range(12))
    assert result.summary["not_run"] == 0 and not result.interrupted


async def test_a_unit_that_plays_its_own_episodes_and_one_whose_play_fails(tmp_path: Path) -> None:
    """A unit's `play` decides how its episodes run (groups re-run an infra failure); a play that raises is a
    bug the pool contains: its episodes are recorded as UnitError records and the run goes on."""
    out = tmp_path / "run"

    async def one_by_one(specs: list[Any], episode: Any) -> list[EpisodeRecord]:
        return [await episode(s) for s in specs]

    async def broken(specs: list[Any], episode: Any) -> list[EpisodeRecord]:
        raise RuntimeError("the group lost its way")

    class Played(PreparedRun):
        def units(self) -> Iterator[Unit]:
            specs = list(self.specs())
            return iter([Unit(specs[:2], play=one_by_one), Unit(specs[2:], play=broken)])

    base = prepared(out, MemoryWorld(4), StepPolicy())
    result = await run(Played(base.config, base.world, base.tasks, base.harnesses, base.ctx))
    assert result.ran == 4
    by_task = {r["task_idx"]: r for r in lines(out)}
    assert [by_task[i]["outcome"] for i in (0, 1)] == ["complete", "complete"]
    for i in (2, 3):
        assert by_task[i]["outcome"] == "error" and by_task[i]["error"]["class"] == "UnitError.RuntimeError"
    assert any(e["event"] == "unit_failed" for e in events(out))
