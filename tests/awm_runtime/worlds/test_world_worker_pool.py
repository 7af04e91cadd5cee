"""The world worker pool's protocol: request ids, one request at a time, and cancellation that never crosses replies."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

from awm_runtime import EpisodeSpec, ToolCall, run_episode
from awm_runtime._build import build_shaper
from awm_runtime.episode import EpisodeLimits, Harness
from awm_runtime.worlds import WorldOptions, load_worlds
from awm_runtime.worlds._host import SWEEP_S
from awm_runtime.worlds._world_worker_serve import CALL_THREADS
from tests.awm_runtime.isolation.conftest import assert_below_the_runtime
from tests.conftest import ScriptedPolicy


def call(tool: str, args: dict[str, Any] | None = None) -> ToolCall:
    return ToolCall(id=tool, name=tool, arguments=args or {})


def trap_task(world: Any) -> Any:
    return next(t for t in world.tasks() if t.scenario == "trap" and t.task_idx == 0)


async def test_an_episode_cancelled_mid_call_by_its_deadline_never_hands_its_reply_on(trap_dir: Any) -> None:
    """An episode's deadline fires during a slow tool call. The calls after it on the same worker, from other
    episodes, each get their own result; the worker is kept (the late reply is dropped by its id)."""
    world = load_worlds(trap_dir, options=WorldOptions(workers=1, tool_timeout_s=20))
    try:
        t = trap_task(world)
        victim = await world.open(t, episode_id="deadline")
        others = [await world.open(t, episode_id=f"other{i}") for i in range(4)]
        await others[0].call_tool(call("echo", {"tag": "warm"}))  # the worker is up and loaded
        pids = set(world.pool.pids())
        harness = Harness(policy=ScriptedPolicy([("slow", {"seconds": 1.5, "tag": "late"}), "done"]),
                          shaper=build_shaper("awm"), limits=EpisodeLimits(timeout_s=0.5))
        episode = asyncio.create_task(run_episode(EpisodeSpec(scenario="trap", task_idx=0), t, victim, harness))
        await asyncio.sleep(0.2)  # the slow call is in the worker now; queue the others behind it
        results = await asyncio.gather(*(s.call_tool(call("echo", {"tag": f"ep{i}"})) for i, s in enumerate(others)))
        record = await episode
        assert record.outcome == "incomplete" and record.end_reason == "timeout"  # the agent's deadline
        assert [json.loads(r.text)["tag"] for r in results] == ["ep0", "ep1", "ep2", "ep3"]
        again = await asyncio.gather(*(s.call_tool(call("echo", {"tag": f"again{i}"})) for i, s in enumerate(others)))
        assert [json.loads(r.text)["tag"] for r in again] == [f"again{i}" for i in range(4)]
        assert world.pool.replaced == 0 and set(world.pool.pids()) == pids
        await victim.close()
        for s in others:
            await s.close()
    finally:
        await world.aclose()


async def test_cancelled_calls_in_a_burst_each_reply_to_their_own_caller(trap_dir: Any) -> None:
    """Cancel every other call of a burst at random points; every call that completes gets its own tag."""
    world = load_worlds(trap_dir, options=WorldOptions(workers=1, tool_timeout_s=20))
    try:
        t = trap_task(world)
        sessions = [await world.open(t, episode_id=f"b{i}") for i in range(12)]
        tasks = [asyncio.create_task(s.call_tool(call("slow", {"seconds": 0.05, "tag": f"t{i}"})))
                 for i, s in enumerate(sessions)]
        for i, task in enumerate(tasks):
            if i % 2:
                await asyncio.sleep(0.02)
                task.cancel()
        done = await asyncio.gather(*tasks, return_exceptions=True)
        for i, result in enumerate(done):
            if not isinstance(result, BaseException):
                assert json.loads(result.text)["tag"] == f"t{i}"
        assert sum(not isinstance(r, BaseException) for r in done) >= 6
        assert world.pool.replaced == 0
        for s in sessions:
            await s.close()
    finally:
        await world.aclose()


async def test_a_cancelled_call_that_outlives_its_time_replaces_the_worker(trap_dir: Any) -> None:
    """The orphaned reply never comes within the call's limit: the worker is replaced, the next call is served."""
    world = load_worlds(trap_dir, options=WorldOptions(workers=1, tool_timeout_s=1.0))
    try:
        t = trap_task(world)
        a, b = await world.open(t, episode_id="a"), await world.open(t, episode_id="b")
        await b.call_tool(call("echo", {"tag": "warm"}))
        hung = asyncio.create_task(a.call_tool(call("hang")))
        await asyncio.sleep(0.2)
        hung.cancel()
        result = await b.call_tool(call("echo", {"tag": "after"}))
        assert json.loads(result.text)["tag"] == "after"
        await a.close()
        await b.close()
    finally:
        await world.aclose()


async def test_calls_queued_behind_a_full_worker_are_not_timed_out_for_the_queue(trap_dir: Any) -> None:
    """Three times CALL_THREADS calls of 0.4 s on one worker with a 1 s tool timeout: the last third waits two
    rounds for a thread (about 1.2 s in all). The timeout is for running, not queueing: all answer, and the
    worker is kept (issue 32: an overloaded machine turned 2,092 of 10,000 episodes into world errors)."""
    world = load_worlds(trap_dir, options=WorldOptions(workers=1, tool_timeout_s=1.0))
    try:
        t = trap_task(world)
        sessions = [await world.open(t, episode_id=f"q{i}") for i in range(3 * CALL_THREADS)]
        await sessions[0].call_tool(call("echo", {"tag": "warm"}))
        pids = set(world.pool.pids())
        results = await asyncio.gather(*(s.call_tool(call("slow", {"seconds": 0.4, "tag": f"q{i}"}))
                                         for i, s in enumerate(sessions)), return_exceptions=True)
        assert [json.loads(r.text)["tag"] for r in results if not isinstance(r, BaseException)] == [
            f"q{i}" for i in range(len(sessions))], [r for r in results if isinstance(r, BaseException)][:1]
        assert world.pool.replaced == 0 and set(world.pool.pids()) == pids
        for s in sessions:
            await s.close()
    finally:
        await world.aclose()


async def test_a_call_on_a_db_outside_the_episodes_folder_is_refused(trap_dir: Any) -> None:
    """The worker checks the DB's folder as the string the runtime sent: a sibling folder, a path that climbs out
    with `..` or one that only normalises into the folder is refused, and the next call gets a working worker."""
    from awm_runtime._errors import WorldError

    world = load_worlds(trap_dir, options=WorldOptions(workers=1, tool_timeout_s=20))
    try:
        session = await world.open(trap_task(world), episode_id="own")
        await session.call_tool(call("echo", {"tag": "warm"}))
        folder, name = session.worker_db.rsplit("/", 1)
        for db in (f"{folder}-other/{name}", f"{folder}/../{name}", f"{folder}/./{name}", f"/tmp/{name}"):
            try:
                await world.pool.call("trap", db, "echo", {"tag": "x"})
            except WorldError as exc:
                assert "outside this worker's directory" in str(exc), db
            else:
                raise AssertionError(f"{db} was served")
        result = await session.call_tool(call("echo", {"tag": "after"}))
        assert json.loads(result.text)["tag"] == "after"
        await session.close()
    finally:
        await world.aclose()


async def test_world_workers_and_their_zygote_run_below_the_runtime(trap_dir: Any) -> None:
    """Scenario code yields the CPU to the runtime's event loop, which serves every episode."""
    world = load_worlds(trap_dir, options=WorldOptions(workers=1))
    try:
        session = await world.open(trap_task(world), episode_id="nice")
        await session.call_tool(call("echo", {"tag": "x"}))
        pids = world.pool.pids()
        assert len(pids) == 2  # the zygote and the scenario's worker
        for pid in pids:
            assert_below_the_runtime(pid)
        await session.close()
    finally:
        await world.aclose()


def test_an_episode_s_calls_go_back_to_the_worker_that_keeps_its_connection() -> None:
    """Unless that worker is `LOAD_PENALTY` calls busier than the least loaded one, or no longer takes calls."""
    from types import SimpleNamespace

    from awm_runtime.worlds._options import PoolOptions
    from awm_runtime.worlds._world_worker_pool import LOAD_PENALTY, WorldWorkerPool

    pool = WorldWorkerPool(PoolOptions(workers=2))
    a, b = SimpleNamespace(usable=True, queued=0), SimpleNamespace(usable=True, queued=0)
    pool.workers["s"] = [a, b]  # type: ignore[list-item]
    assert pool._pick("s", "ep1.db") is a  # no home yet: the least loaded
    pool._homes["ep1.db"] = b  # type: ignore[assignment]
    assert pool._pick("s", "ep1.db") is b
    b.queued = LOAD_PENALTY - 1
    assert pool._pick("s", "ep1.db") is b
    b.queued = LOAD_PENALTY
    assert pool._pick("s", "ep1.db") is a
    b.queued, b.usable = 0, False  # it retires: its connections go with it
    assert pool._pick("s", "ep1.db") is a
    pool.release("ep1.db")
    assert "ep1.db" not in pool._homes


async def test_a_session_s_calls_record_their_worker_and_its_close_forgets_it(trap_dir: Any) -> None:
    world = load_worlds(trap_dir, options=WorldOptions(workers=2, tool_timeout_s=20))
    try:
        session = await world.open(trap_task(world), episode_id="home")
        await session.call_tool(call("echo", {"tag": "a"}))
        home = world.pool._homes[session.worker_db]
        assert home in world.pool.workers["trap"]
        await session.call_tool(call("echo", {"tag": "b"}))
        assert world.pool._homes[session.worker_db] is home
        await session.close()
        assert session.worker_db not in world.pool._homes
    finally:
        await world.aclose()


def _fds_and_threads(pid: int) -> tuple[int, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    threads = next(line for line in status.splitlines() if line.startswith("Threads:"))
    return len(os.listdir(f"/proc/{pid}/fd")), int(threads.split()[1])


async def _settled(pid: int, want: tuple[int, int] | None = None, timeout_s: float = 30.0) -> tuple[int, int]:
    """The worker's (descriptors, threads) once unchanged for longer than its sweep of ended episodes'
    connections (and equal to `want`, if given)."""
    end = time.monotonic() + timeout_s
    last, since = _fds_and_threads(pid), time.monotonic()
    while True:
        await asyncio.sleep(0.25)
        now = _fds_and_threads(pid)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > SWEEP_S + 0.5 and (want is None or now == want):
            return now
        if time.monotonic() > end:
            return now


async def test_a_world_worker_s_descriptors_and_threads_come_back_after_bursts_of_episodes(trap_dir: Any) -> None:
    """Issue 49: through a run a world worker's descriptors grew (558 -> 665 over 2,040 episodes, 235 -> 508 on
    another): each call thread it ever started kept its event loop (an epoll and a self-pipe). Rounds of
    episodes, each a burst of calls that wait side by side and a DB write, leave the worker with the
    descriptors and threads it had after the first few sequential episodes, once its idle threads end (their calls
    ran in place, on its main thread: no call thread is left once the bursts' threads have been idle)."""
    world = load_worlds(trap_dir, options=WorldOptions(workers=1, tool_timeout_s=20))
    world.pool.options = dataclasses.replace(world.pool.options, call_idle_exit_s=0.5)  # before its worker starts
    try:
        t = trap_task(world)

        async def episodes(n: int, tag: str, seconds: float) -> None:
            sessions = [await world.open(t, episode_id=f"{tag}{i}") for i in range(n)]
            await asyncio.gather(*(s.call_tool(call("slow", {"seconds": seconds, "tag": f"{tag}{i}"}))
                                   for i, s in enumerate(sessions)))
            await asyncio.gather(*(s.call_tool(call("add_item", {"name": tag})) for s in sessions))
            for s in sessions:
                await s.close()

        for i in range(3):
            await episodes(1, f"first{i}", 0.0)
        (worker,) = world.pool.workers["trap"]
        assert worker.pid is not None
        before = await _settled(worker.pid)
        seen: list[tuple[int, int]] = []

        async def watch() -> None:
            while True:
                seen.append(_fds_and_threads(worker.pid))
                await asyncio.sleep(0.05)

        watcher = asyncio.create_task(watch())
        for round_ in range(3):
            await episodes(16, f"r{round_}.", 0.3)
        watcher.cancel()
        assert max(t for _, t in seen) > before[1] + 2, "the bursts ran on the threads already there: nothing tested"
        after = await _settled(worker.pid, want=before)
        assert after == before, f"(descriptors, threads): {before} after the first episodes, {after} after 48 more"
        assert world.pool.workers["trap"] == [worker] and world.pool.replaced == 0
    finally:
        await world.aclose()


async def test_the_world_zygote_fixes_glibc_s_mmap_threshold_for_its_workers(trap_dir: Any) -> None:
    """Workers are forked from the zygote and inherit its allocator settings: their heaps do not creep over a long
    run (awm_runtime/_malloc.py; this machine's Python runs on glibc)."""
    world = load_worlds(trap_dir, options=WorldOptions(workers=1))
    try:
        session = await world.open(trap_task(world), episode_id="malloc")
        await session.call_tool(call("echo", {"tag": "x"}))
        assert world.pool.zygote.hello["steady_malloc"] is True
        await session.close()
    finally:
        await world.aclose()
