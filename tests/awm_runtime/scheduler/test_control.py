"""Run control: the must-finish helper, stop requests and signals, and the loop-lag probe."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from awm_runtime.scheduler import LoopLag, RunControl, must_finish


async def test_must_finish_completes_the_work_then_reraises_the_cancellation() -> None:
    finished: list[str] = []

    async def cleanup() -> str:
        await asyncio.sleep(0.2)
        finished.append("flushed")
        return "ok"

    async def caller() -> str:
        return await must_finish(cleanup())

    task = asyncio.create_task(caller())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished == ["flushed"]  # the cancelled caller waited for the cleanup to end
    assert await must_finish(cleanup()) == "ok"


async def test_must_finish_survives_repeated_cancellation() -> None:
    finished: list[int] = []

    async def cleanup() -> None:
        await asyncio.sleep(0.2)
        finished.append(1)

    task = asyncio.create_task(must_finish(cleanup()))
    for _ in range(3):
        await asyncio.sleep(0.03)
        task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished == [1]


async def test_first_stop_is_graceful_second_is_hard() -> None:
    control = RunControl(grace_s=60)
    assert not control.stop_requested
    control.stop("SIGTERM")
    assert control.stop_requested and not control.hard.is_set() and control.reason == "SIGTERM"
    control.stop("SIGINT")
    assert control.hard.is_set() and control.reason == "SIGTERM"


async def test_grace_ends_after_grace_seconds_or_at_a_hard_stop() -> None:
    control = RunControl(grace_s=0.1)
    control.stop()
    async with asyncio.timeout(2):
        await control.wait_grace_over()
    control = RunControl(grace_s=600)
    waiter = asyncio.create_task(control.wait_grace_over())
    control.stop()
    await asyncio.sleep(0.05)
    assert not waiter.done()
    control.stop()
    async with asyncio.timeout(2):
        await waiter


async def test_signals_request_a_stop() -> None:
    control = RunControl()
    seen: list[tuple[str, bool]] = []
    remove = control.install_signal_handlers(lambda name, hard: seen.append((name, hard)))
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        async with asyncio.timeout(2):
            await control.stopping.wait()
        os.kill(os.getpid(), signal.SIGINT)
        async with asyncio.timeout(2):
            await control.hard.wait()
    finally:
        remove()
    assert seen == [("SIGTERM", False), ("SIGINT", True)]


def test_loop_lag_percentiles_use_fixed_memory() -> None:
    lag = LoopLag()
    for ms in [0.2] * 98 + [30.0, 700.0]:
        lag.add(ms)
    assert lag.percentile(0.5) == 1.0 and lag.percentile(0.99) == 31.0 and lag.percentile(1.0) == 701.0
    lag.add(99_999.0)  # beyond the last bucket: counted there, not dropped
    assert lag.samples == 101 and lag.max_ms == 99_999.0 and len(lag.counts) == LoopLag.BUCKETS


async def test_loop_lag_sees_a_blocked_loop() -> None:
    import time

    lag = LoopLag(interval_s=0.01)
    probe = asyncio.create_task(lag.run())
    await asyncio.sleep(0.05)
    time.sleep(0.2)  # noqa: ASYNC251 - block the loop on purpose
    await asyncio.sleep(0.05)
    probe.cancel()
    assert lag.max_ms >= 150


def test_the_first_warning_of_each_kind_is_kept_as_one_line_for_the_terminal() -> None:
    from awm_runtime.scheduler import RunProgress
    from awm_runtime.scheduler._progress import MAX_WARNINGS

    progress = RunProgress()
    progress.warn({"event": "world_disk_small", "level": "warning", "timestamp": "t", "scenario": "a", "mib": 16,
                   "note": "raise it"})
    progress.warn({"event": "world_disk_small", "level": "warning", "scenario": "b", "note": "raise it"})
    progress.warn({"event": "world_open_failed", "level": "error", "shard": 1, "error": "full"})
    assert progress.warnings == {"world_disk_small": "world_disk_small: scenario=a mib=16; raise it",
                                 "world_open_failed": "world_open_failed: error=full"}
    for i in range(2 * MAX_WARNINGS):
        progress.warn({"event": f"kind{i}"})
    assert len(progress.warnings) == MAX_WARNINGS


async def test_must_finish_passes_on_the_cancellation_of_the_work_itself() -> None:
    async def gives_up() -> None:
        raise asyncio.CancelledError  # e.g. loop teardown cancelled the work: nothing left to protect

    with pytest.raises(asyncio.CancelledError):
        await must_finish(gives_up())


def test_off_the_main_thread_no_signal_is_installed_and_stop_still_works() -> None:
    import threading

    seen: list[bool] = []

    async def main() -> None:
        control = RunControl(grace_s=1.0)
        remove = control.install_signal_handlers()
        remove()  # nothing was installed: nothing to remove
        control.stop("test")
        seen.append(control.stop_requested)

    thread = threading.Thread(target=lambda: asyncio.run(main()))
    thread.start()
    thread.join(30)
    assert seen == [True]


def test_a_process_that_is_gone_has_no_resident_memory() -> None:
    from awm_runtime.scheduler import rss_mib

    assert rss_mib(2**22 + 7) == 0.0 and rss_mib() > 0


def test_every_percentile_lands_in_a_bucket() -> None:
    lag = LoopLag()
    for ms in (0.5, 3.2, 20_000.0):  # the last is beyond the buckets: it counts in the top one
        lag.add(ms)
    assert [lag.percentile(q) for q in (0.0, 0.33, 0.66, 1.0)] == [1.0, 1.0, 4.0, float(LoopLag.BUCKETS)]
