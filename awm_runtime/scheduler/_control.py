"""Run control: stop requests with a grace period, the must-finish helper, and the loop-lag probe."""

from __future__ import annotations

import asyncio
import itertools
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def must_finish(aw: Awaitable[T]) -> T:
    """Run `aw` to its end even if the caller is cancelled meanwhile, then re-raise the cancellation.

    The one shielded helper for cleanup that must complete (appending a record, closing a world
    session): a bare `await asyncio.shield(x)` returns at the cancellation while `x` runs on
    unsupervised, so the caller's `finally` could close a file `x` is still writing to.
    """
    task = asyncio.ensure_future(aw)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done():  # the work itself was cancelled (loop teardown): nothing left to protect
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result


class RunControl:
    """Asks a run to stop. The first request stops new episodes and gives in-flight ones `grace_s`
    seconds; a second request (or `hard=True`) cancels them at once. Cancelled episodes are not
    recorded, so `--resume` runs them again."""

    def __init__(self, grace_s: float = 30.0) -> None:
        self.grace_s = grace_s
        self.reason: str | None = None
        self._stopping: asyncio.Event | None = None
        self._hard: asyncio.Event | None = None

    @property
    def stopping(self) -> asyncio.Event:
        if self._stopping is None:
            self._stopping = asyncio.Event()
        return self._stopping

    @property
    def hard(self) -> asyncio.Event:
        if self._hard is None:
            self._hard = asyncio.Event()
        return self._hard

    @property
    def stop_requested(self) -> bool:
        return self.stopping.is_set()

    def stop(self, reason: str = "requested", *, hard: bool = False) -> None:
        if self.stopping.is_set() or hard:
            self.hard.set()
        if self.reason is None:
            self.reason = reason
        self.stopping.set()

    def install_signal_handlers(self, on_signal: Callable[[str, bool], None] | None = None) -> Callable[[], None]:
        """SIGINT/SIGTERM call `stop` (from the running loop); returns a function that removes them."""
        loop = asyncio.get_running_loop()
        installed = []

        def handler(name: str) -> None:
            hard = self.stopping.is_set()
            self.stop(name, hard=hard)
            if on_signal is not None:
                on_signal(name, hard)

        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, handler, sig.name)
                installed.append(sig)
            except (NotImplementedError, RuntimeError):  # not the main thread, or no signals here
                continue

        def remove() -> None:
            for sig in installed:
                loop.remove_signal_handler(sig)

        return remove

    async def wait_grace_over(self) -> None:
        """Returns when the grace period after a stop request is over, or at a hard stop."""
        await self.stopping.wait()
        try:
            async with asyncio.timeout(self.grace_s):
                await self.hard.wait()
        except TimeoutError:
            pass


class LoopLag:
    """Measures how late the event loop wakes a sleeper: a saturated loop answers late to everything.

    Counts live in 1 ms buckets up to 10 s, so memory is fixed however long the run."""

    BUCKETS = 10_001

    def __init__(self, interval_s: float = 0.02) -> None:
        self.interval_s = interval_s
        self.counts = [0] * self.BUCKETS
        self.samples = 0
        self.max_ms = 0.0

    def add(self, lag_ms: float) -> None:
        self.counts[min(int(lag_ms), self.BUCKETS - 1)] += 1
        self.samples += 1
        self.max_ms = max(self.max_ms, lag_ms)

    async def run(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(self.interval_s)
            self.add(max(0.0, (time.perf_counter() - started - self.interval_s) * 1000))

    def percentile(self, q: float) -> float:
        """The upper edge (ms) of the bucket holding the q-quantile."""
        if not self.samples:
            return 0.0
        need = q * self.samples  # q <= 1: the last bucket holds every sample, so one is always found
        return float(next(ms for ms, seen in enumerate(itertools.accumulate(self.counts), 1) if seen >= need))

    def to_dict(self) -> dict[str, Any]:
        return {"samples": self.samples, "p50_ms": self.percentile(0.5), "p99_ms": self.percentile(0.99),
                "max_ms": round(self.max_ms, 1)}


def rss_mib(pid: int | str = "self") -> float:
    """Resident set size of a process, from /proc (0.0 where /proc is not available)."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as fh:
            pages = int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    import resource

    return pages * resource.getpagesize() / (1 << 20)


def peak_rss_mib() -> float:
    """The high-water mark of this process's RSS (VmHWM)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def cpu_s(who: int = 0) -> float:
    """CPU seconds (user + system) of this process (`who=0`) or of its reaped children (`who=-1`)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN if who == -1 else resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
