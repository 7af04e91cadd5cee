"""Loop slices: a burst of CPU-heavy steps no longer holds the event loop for the whole burst."""

from __future__ import annotations

import asyncio
import time

from awm_runtime._slices import LoopSlices, loop_slice, sharing_loop


def _burn(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def _burst(slices: LoopSlices | None, steps: int, step_s: float) -> tuple[int, list[int]]:
    """`steps` tasks wake at once and each burns `step_s` after asking for a slice; a sleeper counts how many steps
    ran while it waited for the loop (steps, not wall time: a loaded machine that deschedules the process stretches
    a wait, not the number of steps in it). Returns the most steps one wait of the sleeper's took, and the order the
    steps ran in."""
    order: list[int] = []
    worst = 0
    go = asyncio.Event()

    async def step(i: int) -> None:
        await go.wait()
        await loop_slice()
        _burn(step_s)
        order.append(i)

    async def sleeper() -> None:
        nonlocal worst
        while len(order) < steps:
            ran = len(order)
            await asyncio.sleep(0.002)
            worst = max(worst, len(order) - ran)

    async def play() -> None:
        tasks = [asyncio.create_task(step(i)) for i in range(steps)]
        watcher = asyncio.create_task(sleeper())
        await asyncio.sleep(0.01)
        go.set()
        await asyncio.gather(*tasks)
        await watcher

    if slices is None:
        await play()
    else:
        with sharing_loop(slices):
            await play()
    return worst, order


def test_a_burst_of_heavy_steps_leaves_the_loop_free_every_slice() -> None:
    # 200 steps of 2 ms wake in one iteration: 400 ms of CPU. Unsliced, a sleeper waits the whole burst.
    unsliced, _ = asyncio.run(_burst(None, 200, 0.002))
    slices = LoopSlices(slice_s=0.02)
    sliced, order = asyncio.run(_burst(slices, 200, 0.002))
    assert unsliced == 200  # the whole burst ran in one wait of the sleeper's
    # Sliced, the sleeper waits about one 20 ms slice of the 400 ms burst: ~10 steps of 2 ms (fewer when the machine
    # is loaded: a slice is wall time). Counted in steps, so load cannot stretch it.
    assert sliced <= 50, f"the loop was held for {sliced} of 200 steps at once"
    assert order == sorted(order)  # first come, first served
    assert slices.steps == 200 and 0 < slices.waited < 200
    assert slices.to_dict()["max_wait_ms"] > 200  # the work itself waited, here, where it is counted


def test_a_quiet_loop_never_waits() -> None:
    async def main() -> LoopSlices:
        slices = LoopSlices(slice_s=0.02)
        with sharing_loop(slices):
            for _ in range(50):
                await loop_slice()
                _burn(0.0002)
                await asyncio.sleep(0)
        return slices

    slices = asyncio.run(main())
    assert slices.steps == 50 and slices.waited == 0


def test_outside_a_pool_a_slice_is_free() -> None:
    async def main() -> None:
        for _ in range(3):
            await loop_slice()

    asyncio.run(main())


def test_a_step_cancelled_while_it_queues_leaves_the_queue_moving() -> None:
    async def main() -> list[int]:
        slices = LoopSlices(slice_s=0.001)
        ran: list[int] = []
        with sharing_loop(slices):
            async def step(i: int) -> None:
                await loop_slice()
                _burn(0.002)
                ran.append(i)

            tasks = [asyncio.create_task(step(i)) for i in range(20)]
            await asyncio.sleep(0)
            tasks[5].cancel()
            tasks[6].cancel()
            await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
        assert all(t.done() for t in tasks)
        return ran

    ran = asyncio.run(main())
    assert sorted(ran) == [i for i in range(20) if i not in (5, 6)]
