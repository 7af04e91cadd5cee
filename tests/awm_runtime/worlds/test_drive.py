"""`_drive.run`: a coroutine run to its end on an idle loop, its first step without the loop's machinery, the loop
taking over whenever that step leaves it work. What the coroutine sees, returns and raises is what
`run_until_complete` gives it."""

from __future__ import annotations

import asyncio
import gc
import selectors
import sys
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
import sniffio

from awm_runtime.worlds._drive import run


class _CountingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """A selector that counts its polls (each an epoll_wait)."""

    polls = 0

    def select(self, timeout: float | None = None) -> list[Any]:
        type(self).polls += 1
        return super().select(timeout)


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    _CountingSelector.polls = 0
    loop = asyncio.SelectorEventLoop(_CountingSelector())
    try:
        yield loop
    finally:
        loop.close()


def test_a_coroutine_that_never_suspends_runs_without_polling(loop: asyncio.AbstractEventLoop) -> None:
    seen: dict[str, Any] = {}

    async def handler(x: int) -> int:
        seen["loop"] = asyncio.get_running_loop()
        seen["task"] = asyncio.current_task()
        seen["running"] = loop.is_running()
        seen["library"] = sniffio.current_async_library()
        return x * 2

    assert run(loop, handler(21)) == 42
    assert seen["loop"] is loop and isinstance(seen["task"], asyncio.Task) and seen["running"] is True
    assert seen["library"] == "asyncio"
    assert _CountingSelector.polls == 0
    assert not loop.is_running() and asyncio.events._get_running_loop() is None
    assert sys.get_asyncgen_hooks().firstiter != loop._asyncgen_firstiter_hook  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()  # marked running only during the step


@pytest.mark.parametrize("how", ["sleep0", "sleep", "thread", "anyio_thread", "executor"])
def test_a_coroutine_that_suspends_is_finished_by_the_loop(loop: asyncio.AbstractEventLoop, how: str) -> None:
    async def handler() -> str:
        before = asyncio.current_task()
        if how == "sleep0":
            await asyncio.sleep(0)
        elif how == "sleep":
            await asyncio.sleep(0.01)
        elif how == "thread":
            future = asyncio.get_running_loop().create_future()
            threading.Thread(target=lambda: loop.call_soon_threadsafe(future.set_result, "x")).start()
            await future
        elif how == "anyio_thread":
            await anyio.to_thread.run_sync(lambda: None)
        else:
            await asyncio.get_running_loop().run_in_executor(None, lambda: None)
        assert asyncio.current_task() is before
        return how

    assert run(loop, handler()) == how
    assert _CountingSelector.polls > 0  # the loop ran
    assert run(loop, handler()) == how  # and the loop can be driven again


def test_exceptions_are_the_coroutines(loop: asyncio.AbstractEventLoop) -> None:
    async def fails() -> None:
        raise ValueError("boom")

    async def fails_later() -> None:
        await asyncio.sleep(0)
        raise KeyError("later")

    with pytest.raises(ValueError, match="boom"):
        run(loop, fails())
    with pytest.raises(KeyError, match="later"):
        run(loop, fails_later())


def test_system_exit_goes_through_and_leaves_the_loop_idle(loop: asyncio.AbstractEventLoop,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    async def exits() -> None:
        raise SystemExit(3)

    async def fine() -> int:
        return 1

    with pytest.raises(SystemExit):
        run(loop, exits())
    assert not loop.is_running() and asyncio.events._get_running_loop() is None
    assert run(loop, fine()) == 1
    gc.collect()
    assert "never retrieved" not in caplog.text  # the Task's exception was taken, as run_until_complete takes it


def test_callbacks_the_step_scheduled_run_before_it_returns(loop: asyncio.AbstractEventLoop) -> None:
    ran: list[str] = []

    async def schedules() -> str:
        asyncio.get_running_loop().call_soon(ran.append, "callback")
        asyncio.get_running_loop().create_task(_note(ran, "task"))
        return "done"

    assert run(loop, schedules()) == "done"
    assert ran == ["callback", "task"]  # as run_until_complete's last turn runs them


async def _note(ran: list[str], what: str) -> None:
    ran.append(what)


def test_work_already_waiting_on_the_loop_runs_first(loop: asyncio.AbstractEventLoop) -> None:
    ran: list[str] = []
    loop.call_soon(ran.append, "earlier")

    async def handler() -> None:
        ran.append("handler")

    run(loop, handler())
    assert ran == ["earlier", "handler"]


def test_a_running_loop_is_refused_as_run_until_complete_refuses_it(loop: asyncio.AbstractEventLoop) -> None:
    async def inner() -> int:
        return 1

    async def outer() -> None:
        coro = inner()
        try:
            with pytest.raises(RuntimeError):
                run(loop, coro)
        finally:
            coro.close()

    loop.run_until_complete(outer())


def test_async_generators_made_in_the_step_are_the_loops(loop: asyncio.AbstractEventLoop) -> None:
    async def gen() -> Any:
        yield 1
        yield 2

    kept: list[Any] = []

    async def handler() -> int:
        kept.append(gen())
        value: int = await kept[0].__anext__()
        return value

    assert run(loop, handler()) == 1
    assert set(loop._asyncgens) == {kept[0]}  # type: ignore[attr-defined]  # registered by the loop's firstiter hook
    loop.run_until_complete(loop.shutdown_asyncgens())  # and closed by it
    assert kept[0].ag_frame is None


def test_timers_left_on_the_loop_still_run_during_a_call(loop: asyncio.AbstractEventLoop) -> None:
    ran: list[str] = []
    loop.call_later(0.0, ran.append, "timer")  # as a task scenario code left sleeping on the loop

    async def handler() -> str:
        await asyncio.sleep(0.01)  # long enough for the timer to come due while the loop runs
        return "done"

    assert run(loop, handler()) == "done"
    assert ran == ["timer"]
    loop.call_later(0.0, ran.append, "due")

    async def quick() -> str:
        return "quick"

    assert run(loop, quick()) == "quick"
    assert ran == ["timer", "due"]  # the loop ran for it, as run_until_complete would have
