"""The runtime: resume as a set difference (torn tails, groups), the manifest, and flat memory."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import awm_runtime.scheduler._run as run_module
from awm_runtime.scheduler import PreparedRun, RunProgress, Unit, run
from awm_runtime.scheduler._control import rss_mib
from tests.awm_runtime.scheduler.conftest import MemoryWorld, StepPolicy, prepared
from tests.awm_runtime.scheduler.test_episode_pool import lines


def keys(out: Path) -> list[tuple[str, str, int, int]]:
    return [(r["arm"], r["scenario"], r["task_idx"], r["repeat"]) for r in lines(out)]


async def test_resume_after_a_torn_tail_records_every_key_exactly_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    prep = prepared(out, MemoryWorld(6), StepPolicy(), concurrency=3, repeats=2, arms=("a", "b"))
    first = await run(prep)
    assert len(keys(out)) == 24
    whole = (out / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    (out / "episodes.jsonl").write_bytes(b"".join(whole[:10]) + whole[10][: len(whole[10]) // 2])  # a torn write

    prep2 = prepared(out, MemoryWorld(6), StepPolicy(), concurrency=3, repeats=2, arms=("a", "b"), resume=True)
    second = await run(prep2)
    got = keys(out)
    assert len(got) == len(set(got)) == 24
    assert second.skipped == 10 and second.ran == 14 and second.summary["not_run"] == 0
    assert second.run_id == first.run_id  # one run, two sessions
    manifest = json.loads((out / "manifest.json").read_text())
    assert [s["resumed"] for s in manifest["sessions"]] == [False, True]
    assert second.summary["episodes"] == 24  # the summary covers the whole run directory


async def test_resume_of_a_partly_recorded_group_writes_only_the_missing_records(tmp_path: Path) -> None:
    out = tmp_path / "run"

    class Pairs(PreparedRun):
        def units(self) -> Iterator[Unit]:
            specs = list(self.specs())
            return iter([Unit(specs[i:i + 2], lambda rs: rs) for i in range(0, len(specs), 2)])

    base = prepared(out, MemoryWorld(4), StepPolicy(), concurrency=4)
    await run(Pairs(base.config, base.world, base.tasks, base.harnesses, base.ctx))
    whole = (out / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    first_of_pair = [w for w in whole if json.loads(w)["task_idx"] in (0, 2, 3)]
    (out / "episodes.jsonl").write_bytes(b"".join(first_of_pair))

    again = prepared(out, MemoryWorld(4), StepPolicy(), concurrency=4, resume=True)
    result = await run(Pairs(again.config, again.world, again.tasks, again.harnesses,
                                                    again.ctx))
    assert sorted(k[2] for k in keys(out)) == [0, 1, 2, 3]
    assert result.ran == 1


async def test_memory_stays_flat_over_a_long_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    prep = prepared(out, MemoryWorld(50), StepPolicy(steps=2), concurrency=64, repeats=80)  # 4,000 episodes
    progress = RunProgress()
    samples: list[tuple[int, float]] = []

    async def sample() -> None:
        while True:
            samples.append((progress.finished, rss_mib()))
            await asyncio.sleep(0.05)

    sampler = asyncio.create_task(sample())
    result = await run(prep, progress=progress)
    sampler.cancel()
    assert result.ran == 4000
    warm = max(rss for done, rss in samples if done <= 1000)
    late = max(rss for done, rss in samples if done >= 3000)
    assert late - warm < 8, f"RSS grew {late - warm:.1f} MiB from 1,000 to 4,000 episodes"
    assert (out / "events.jsonl").stat().st_size > 1_000_000  # the events went to disk, not to memory


def _records_in_flight() -> list[int]:
    """The lines of `_run.run`'s `record` that allocate for records being written (their list, the thread hop):
    held only until written, up to one record per slot at a snapshot (0-6 KB here, 16 slots)."""
    source = Path(run_module.__file__).read_text().splitlines()
    found = [n for n, line in enumerate(source, 1)
             if "fresh = [r for r in records" in line or "asyncio.to_thread(write, fresh)" in line]
    assert len(found) == 2, "record's lines changed: name them again here"
    return found


async def test_a_run_of_one_arm_keeps_nothing_per_episode_in_its_scheduler_and_statistics(tmp_path: Path) -> None:
    """Issue 49: over a long run the runtime's RSS grew with the episodes recorded: every key handed out (kept
    for groups, which plan as they go) and a pair cell per episode (for comparisons a run of one arm never
    makes), 111 B an episode here. Counted by tracemalloc where they were allocated, between the 80th episode
    finished and the 380th: the scheduler's run loop and the run's statistics keep what they had (the
    latency histograms are left out: log-spaced buckets, a fixed most by construction; so are the records
    still being written at either snapshot, `_records_in_flight`)."""
    import tracemalloc

    prep = prepared(tmp_path / "run", MemoryWorld(50), StepPolicy(), concurrency=16, repeats=8)  # 400
    progress = RunProgress()
    held: dict[int, int] = {}
    in_flight = _records_in_flight()
    where = [tracemalloc.Filter(True, "*/awm_runtime/scheduler/_run.py"),
             tracemalloc.Filter(True, "*/awm_runtime/report/*"),
             tracemalloc.Filter(False, "*/awm_runtime/report/_economics.py"),
             *(tracemalloc.Filter(False, "*/awm_runtime/scheduler/_run.py", lineno=n) for n in in_flight)]

    async def sample() -> None:
        for mark in (80, 380):
            while True:  # RunProgress has no event to wait on: polled
                await asyncio.sleep(0.01)
                if progress.finished >= mark:
                    break
            held[mark] = sum(t.size for t in tracemalloc.take_snapshot().filter_traces(where).traces)

    tracemalloc.start()
    try:
        sampler = asyncio.create_task(sample())
        result = await run(prep, progress=progress)
        await sampler
    finally:
        tracemalloc.stop()
    assert result.ran == 400 and result.summary["arms"]["main"]["episodes"] == 400
    grown = held[380] - held[80]
    assert grown < 8 * 300, f"{grown} B more held after 300 more episodes ({grown / 300:.0f} B an episode)"


async def test_a_runs_summary_says_how_its_episodes_shared_the_loop(tmp_path: Path) -> None:
    out = tmp_path / "run"
    prep = prepared(out, MemoryWorld(4), StepPolicy(), concurrency=4, repeats=2)
    result = await run(prep)
    slices = result.summary["loop_slices"]
    # Every episode asks for a slice as it opens its world, after each model reply, tool reply and verdict.
    assert slices["steps"] >= 4 * 2 * 3
    assert set(slices) == {"steps", "waited", "wait_s", "mean_wait_ms", "max_wait_ms", "step_ms"}


async def test_an_until_decided_run_watches_its_pairs_and_says_where_it_started(tmp_path: Path) -> None:
    prep = prepared(tmp_path / "run", MemoryWorld(4), StepPolicy(), arms=("a", "b"), until_decided=True, repeats=2)
    progress = RunProgress()
    started: list[tuple[int, int]] = []
    result = await run(prep, progress=progress, on_start=lambda planned, done: started.append((planned, done)))
    assert started == [(16, 0)] and result.ran == 16
    seq = result.summary["sequential"]
    assert seq["pairs"] == 8 and result.summary["stop_reason"] is None  # two equal arms: never decided
    totals = progress.totals()
    assert totals["episodes"] == 16 and totals["complete"] == 16 and totals["errors"] == 0
    assert totals["cost_known"] is False  # the test policy has no price: unknown, never $0


def test_a_judge_that_leaves_episodes_unclassified_is_said_per_arm() -> None:
    from awm_runtime.scheduler._run import judge_warnings

    warned = judge_warnings({"arms": {"a": {"judge_unclassified_share": 0.25}, "b": {"judge_unclassified_share": 0.05},
                                      "c": {"judge_unclassified_share": None}}})
    assert len(warned) == 1 and warned[0].startswith("arm a: the judge gave no classification for 25%")
    assert judge_warnings({}) == []


async def test_a_resumed_run_with_checkpoints_looks_for_episodes_left_in_flight(tmp_path: Path) -> None:
    from awm_runtime import RunConfig
    from awm_runtime.scheduler import prepare

    config = RunConfig(worlds="builtin", policy="sim/oracle", expert="none", scenarios="shop*", tasks="0",
                       preflight="off", checkpoint="every", out=tmp_path / "run")
    first = await run(config)
    assert first.ran == 1 and (tmp_path / "run" / "checkpoints").is_dir()
    prep = await prepare(config.model_copy(update={"resume": True}))
    again = await run(prep)
    assert again.skipped == 1 and again.ran == 0 and prep.resume_from == {}  # every episode was recorded
