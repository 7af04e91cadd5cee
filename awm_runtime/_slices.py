"""Loop slices: episodes share the event loop in slices of about 20 ms, so the loop stays responsive.

When thousands of model replies land within a second (a batch launched at once, every call taking
the same 30 s), each reply wakes an episode whose next step costs a millisecond or more of CPU:
parse the reply, log the turn, send the tool call or build the next request. asyncio runs every
callback that is ready when a loop iteration starts, so one iteration ran thousands of such steps,
and for hundreds of milliseconds nothing else was served: not a timer, not a socket read, not a
cancellation, not the progress line.

An episode now calls `loop_slice()` where it wakes from a model, a world or a verifier, before its
CPU-heavy step. While the loop is quiet that returns at once. Once the steps run in one loop
iteration have taken `slice_s`, later ones queue (first come, first served) and are let go in
batches, one batch per loop iteration, sized so that an iteration lasts about `slice_s`. The CPU
work is the same; what changes is that it waits here, where it is counted (`to_dict`), and not in
the loop's ready queue, where it delayed everything else.

Outside an `EpisodePool` (an embedding caller's own loop) `loop_slice()` does nothing.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import time
from collections.abc import Iterator
from typing import Any

SLICE_S = 0.02
_MAX_BATCH = 4096
_FIRST_STEP_S = 0.002  # a step's cost until one is measured: a model reply's step is about 1-2 ms

_CURRENT: contextvars.ContextVar[LoopSlices | None] = contextvars.ContextVar("awm_loop_slices", default=None)


class LoopSlices:
    """Hands out the event loop in slices of about `slice_s` to the steps that ask (`take`).

    `waited`, `wait_s` and `max_wait_s` say how much the steps queued here."""

    def __init__(self, slice_s: float = SLICE_S) -> None:
        self.slice_s = slice_s
        self.waited = 0  # steps that queued
        self.steps = 0  # steps that asked
        self.wait_s = 0.0
        self.max_wait_s = 0.0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._opened = 0.0  # perf_counter when the current slice opened; 0 while the loop is quiet
        self._admitted: set[asyncio.Task[Any] | None] = set()  # tasks let go in the current slice
        self._released = 0  # waiters let go together at the last slice's start
        self._batch_began = 0.0  # perf_counter when the first of them resumed
        self._step_s = _FIRST_STEP_S  # what a step costs, measured on the batches let go

    async def take(self) -> None:
        """Return when this step may run: at once while the current slice lasts and nobody queues, or when
        this task was let go in this slice already (a step that asks twice)."""
        self.steps += 1
        task = asyncio.current_task()
        now = time.perf_counter()
        if not self._opened:  # the first step since the loop went quiet opens a slice
            self._open(now)
        elif task not in self._admitted and (self._waiters or now - self._opened >= self.slice_s):
            await self._queue(now)
            return
        self._admitted.add(task)

    async def _queue(self, asked: float) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self.waited += 1
        try:
            await waiter
        finally:
            waited = time.perf_counter() - asked
            self.wait_s += waited
            self.max_wait_s = max(self.max_wait_s, waited)
        if not self._batch_began:  # only a step let go starts its batch's clock: a cancelled one never ran
            self._batch_began = time.perf_counter()
        self._admitted.add(asyncio.current_task())

    def _open(self, now: float) -> None:
        self._opened = now
        asyncio.get_running_loop().call_soon(self._next_iteration)

    def _next_iteration(self) -> None:
        """Runs once per loop iteration while steps queue: lets the next batch go.

        The waiters let go together resume one after the other, with this callback queued right behind
        them, so the time from the first one's resumption to now is what their steps cost."""
        now = time.perf_counter()
        if self._released and self._batch_began:
            measured = (now - self._batch_began) / self._released
            self._step_s = 0.5 * self._step_s + 0.5 * measured
        self._admitted.clear()
        self._released, self._batch_began = 0, 0.0
        if not self._waiters:
            self._opened = 0.0
            return
        batch = max(1, min(_MAX_BATCH, int(self.slice_s / max(self._step_s, 1e-6))))
        while self._waiters and self._released < batch:
            waiter = self._waiters.popleft()
            if not waiter.done():  # a cancelled step has left
                waiter.set_result(None)
                self._released += 1
        self._open(now)

    def to_dict(self) -> dict[str, Any]:
        """What the steps queued here, for a run's summary."""
        return {"steps": self.steps, "waited": self.waited, "wait_s": round(self.wait_s, 3),
                "mean_wait_ms": round(self.wait_s / self.waited * 1000, 2) if self.waited else 0.0,
                "max_wait_ms": round(self.max_wait_s * 1000, 1), "step_ms": round(self._step_s * 1000, 3)}


async def loop_slice() -> None:
    """Wait for this episode's share of the event loop (nothing to wait for outside an `EpisodePool`)."""
    slices = _CURRENT.get()
    if slices is not None:
        await slices.take()


@contextlib.contextmanager
def sharing_loop(slices: LoopSlices) -> Iterator[LoopSlices]:
    """Within the block, and in every task created within it, `loop_slice()` asks `slices`."""
    token = _CURRENT.set(slices)
    try:
        yield slices
    finally:
        _CURRENT.reset(token)
