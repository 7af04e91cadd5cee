"""A batch's resets before its first request: the first wave opens every world, then every episode starts."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from awm_runtime import Message, PolicyTurn, Task, ToolSpec
from awm_runtime.scheduler import run
from awm_runtime.scheduler._first_wave import FirstWave
from tests.awm_runtime.scheduler.conftest import MemorySession, MemoryWorld, StepPolicy, prepared


async def _episode(wave: FirstWave, open_s: float, log: list[str], name: str, fail: bool = False) -> None:
    in_wave = wave.opening_started()
    try:
        await asyncio.sleep(open_s)  # the reset
        if fail:
            raise OSError("template gone")
    except OSError:
        if in_wave:
            await wave.opened(wait=False)
        log.append(f"{name} failed")
        return
    log.append(f"{name} opened")
    if in_wave:
        await wave.opened()
    log.append(f"{name} started")


async def test_the_wave_starts_once_every_episode_that_began_to_open_has_opened() -> None:
    wave, log = FirstWave(enabled=True), []
    await asyncio.gather(_episode(wave, 0.03, log, "a"), _episode(wave, 0.0, log, "b"),
                         _episode(wave, 0.01, log, "c", fail=True))
    assert log[:3] == ["b opened", "c failed", "a opened"]  # nobody started before the slowest reset ended
    assert sorted(log[3:]) == ["a started", "b started"] and wave.released and wave.held == 2
    late: list[str] = []
    await _episode(wave, 0.0, late, "d")  # after the wave: passes at once, not counted
    assert late == ["d opened", "d started"] and wave.opening == 0


async def test_a_cancelled_open_never_holds_the_others_and_a_disabled_wave_holds_nobody() -> None:
    wave, log = FirstWave(enabled=True), []
    slow = asyncio.create_task(_episode(wave, 30, log, "slow"))
    fast = asyncio.create_task(_episode(wave, 0.0, log, "fast"))
    await asyncio.sleep(0.01)
    assert log == ["fast opened"]  # held by the slow reset
    slow.cancel()
    with pytest.raises(asyncio.CancelledError):
        await slow
    await wave.opened(wait=False)  # what the pool does for an open cancelled in the wave
    await asyncio.wait_for(fast, 10)
    assert log == ["fast opened", "fast started"]
    off, log2 = FirstWave(enabled=False), []
    await _episode(off, 0.0, log2, "x")
    assert log2 == ["x opened", "x started"] and off.opening == 0 and off.held == 0


class _TimedWorld(MemoryWorld):
    """Task i's reset takes i x 10 ms; remembers when each ended."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.opened_at: list[float] = []

    async def open(self, task: Task, *, episode_id: str) -> MemorySession:
        await asyncio.sleep(0.01 * task.task_idx)
        self.opened_at.append(asyncio.get_running_loop().time())
        return await super().open(task, episode_id=episode_id)


class _TimedPolicy(StepPolicy):
    """Remembers when each first request went out."""

    def __init__(self) -> None:
        super().__init__(steps=1)
        self.first_at: list[float] = []

    async def act(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, seed: int = 0) -> PolicyTurn:
        if not any(m.role == "assistant" for m in messages):
            self.first_at.append(asyncio.get_running_loop().time())
        return await super().act(messages, tools, seed=seed)


@pytest.mark.parametrize(("concurrency", "batch"), [(8, True), (4, False)])
async def test_a_run_launched_at_once_resets_every_world_before_its_first_request(
        tmp_path: Path, concurrency: int, batch: bool) -> None:
    world, policy = _TimedWorld(8), _TimedPolicy()
    result = await run(prepared(tmp_path / "run", world, policy, concurrency=concurrency))
    assert result.summary["recorded"] == 8 and world.opened == world.closed == 8
    if batch:  # every planned episode in flight at once: the first request after the last reset
        assert min(policy.first_at) >= max(world.opened_at)
    else:  # a pool that streams: each episode starts as soon as its own world opened
        assert min(policy.first_at) < max(world.opened_at)


async def test_a_failed_open_in_a_batch_is_recorded_and_the_rest_start(tmp_path: Path) -> None:
    world = MemoryWorld(6, fail_open={3})
    result = await run(prepared(tmp_path / "run", world, StepPolicy(steps=2), concurrency=6))
    outcomes: dict[str, Any] = result.summary["arms"]["main"]["outcomes"]
    assert result.summary["recorded"] == 6 and outcomes == {"complete": 5, "error": 1}
