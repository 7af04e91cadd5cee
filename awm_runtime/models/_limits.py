"""Per-endpoint limits and live counters: a concurrency limit that adapts to 429s (AIMD) and
optional rpm/tpm budgets. One limiter per (endpoint, key variable): calls that share a key share
the provider's rate limit, whichever role makes them."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from awm_runtime import _events

# A 429 halves the limit at most once per this many seconds: the calls already in flight when the
# first 429 arrives come back 429 too, and must not collapse the limit to 1.
DECREASE_COOLDOWN_S = 2.0
# Budgets may bank this many seconds of unused rate, so a quiet endpoint allows a short burst.
BURST_S = 1.0


@dataclass(frozen=True, slots=True)
class EndpointStats:
    """A snapshot for the live view and the logs. `limit` is the current (adaptive) concurrency limit."""

    endpoint: str
    roles: tuple[str, ...]
    limit: int
    in_flight: int
    in_backoff: int
    calls: int
    errors: int
    max_limit: int = 0  # the configured max_concurrency the limit grows back to
    queued: int = 0  # calls waiting for a slot or for rpm/tpm budget
    rate_limited: int = 0  # 429s seen
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _Budget:
    """A token bucket refilled at `per_minute / 60` per second. It may go into debt (a large
    request takes what it needs); callers wait while the level is not positive."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * BURST_S)
        self.level = self.capacity
        self._stamp = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self._stamp) * self.rate)
        self._stamp = now

    def wait_s(self, need: float) -> float:
        """Seconds until `need` (capped at the capacity) is available; 0 means take it now."""
        self._refill()
        short = min(need, self.capacity) - self.level
        return 0.0 if short <= 0 else short / self.rate

    def take(self, amount: float) -> None:
        self._refill()
        self.level -= amount


class Slot:
    """One admitted call. Tell it how the call went so the limiter can adapt."""

    __slots__ = ("_lim", "estimate")

    def __init__(self, lim: EndpointLimiter, estimate: int) -> None:
        self._lim, self.estimate = lim, estimate

    def succeeded(self, prompt_tokens: int, completion_tokens: int) -> None:
        self._lim.on_success(prompt_tokens, completion_tokens, self.estimate)

    def failed(self, kind: str) -> None:
        self._lim.on_failure(kind)


class EndpointLimiter:
    def __init__(self, endpoint: str, limit: int, *, rpm: int | None = None, tpm: int | None = None) -> None:
        self.endpoint = endpoint
        self.max_limit = limit
        self._limit = float(limit)
        self.roles: set[str] = set()
        self.in_flight = 0
        self.in_backoff = 0
        self.queued = 0
        self.calls = 0
        self.errors = 0
        self.rate_limited = 0
        self.retries = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.rpm = _Budget(rpm) if rpm else None
        self.tpm = _Budget(tpm) if tpm else None
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._budget_lock = asyncio.Lock()
        self._last_decrease = -DECREASE_COOLDOWN_S
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def limit(self) -> int:
        return max(1, int(self._limit))

    def tighten(self, limit: int, rpm: int | None, tpm: int | None) -> None:
        """Another alias on the same endpoint and key: the strictest settings win."""
        if limit < self.max_limit:
            self.max_limit = limit
            self._limit = min(self._limit, float(limit))
        if rpm and (self.rpm is None or rpm / 60.0 < self.rpm.rate):
            self.rpm = _Budget(rpm)
        if tpm and (self.tpm is None or tpm / 60.0 < self.tpm.rate):
            self.tpm = _Budget(tpm)

    # -- admission -------------------------------------------------------------------------------

    async def _acquire(self) -> None:
        if not self._waiters and self.in_flight < self.limit:
            self.in_flight += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # the slot was handed to us just as we were cancelled: pass it on
            elif waiter in self._waiters:  # a wake-up may already have dropped our cancelled future
                self._waiters.remove(waiter)
            raise

    def _release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1  # handed over directly, so no newcomer can overtake the queue
                waiter.set_result(None)

    def _budget_short(self, estimate: int) -> bool:
        return bool((self.rpm and self.rpm.wait_s(1) > 0) or (self.tpm and self.tpm.wait_s(estimate) > 0)
                    or self._budget_lock.locked())

    async def _spend_budget(self, estimate: int) -> None:
        async with self._budget_lock:  # one waiter at a time keeps budget order first-come
            while True:
                wait = max(self.rpm.wait_s(1) if self.rpm else 0.0, self.tpm.wait_s(estimate) if self.tpm else 0.0)
                if wait <= 0:
                    break
                await asyncio.sleep(wait)
            if self.rpm:
                self.rpm.take(1)
            if self.tpm:
                self.tpm.take(estimate)

    @asynccontextmanager
    async def slot(self, estimate_tokens: int = 0) -> AsyncIterator[Slot]:
        """Admission for one HTTP attempt: rpm/tpm budget first, then a concurrency slot."""
        loop = asyncio.get_running_loop()  # admit(), inlined: this is the hot path of every model call
        if loop is not self._loop:  # a new run in this process: waiters of a dead loop never wake
            self._loop, self._budget_lock = loop, asyncio.Lock()
            self._waiters.clear()
        self.queued += 1
        waits = bool(self._waiters) or self.in_flight >= self.limit or self._budget_short(estimate_tokens)
        if waits:  # the slow path only: the episode learns that its time now goes to the endpoint's queue
            _events.model_queued(endpoint=self.endpoint, waiting=True)
        try:
            if self.rpm or self.tpm:
                await self._spend_budget(estimate_tokens)
            await self._acquire()
        finally:
            self.queued -= 1
        if waits:
            _events.model_queued(endpoint=self.endpoint, waiting=False)
        try:
            yield Slot(self, estimate_tokens)
        finally:
            self.calls += 1
            self._release()

    async def admit(self, estimate_tokens: int = 0) -> Slot:
        """Wait for the budget and a slot; the caller must call `finish()` once the attempt is over
        (`slot()` does both; the cluster-wide limits hold a slot across calls)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new run in this process: waiters of a dead loop never wake
            self._loop, self._budget_lock = loop, asyncio.Lock()
            self._waiters.clear()
        self.queued += 1
        try:
            if self.rpm or self.tpm:
                await self._spend_budget(estimate_tokens)
            await self._acquire()
        finally:
            self.queued -= 1
        return Slot(self, estimate_tokens)

    def finish(self) -> None:
        """An admitted attempt is over: count it and hand its slot on."""
        self.calls += 1
        self._release()

    def spec(self) -> dict[str, Any]:
        """The configured limits (after tightening), to rebuild this limiter elsewhere."""
        return {"endpoint": self.endpoint, "limit": self.max_limit, "rpm": self.rpm.per_minute if self.rpm else None,
                "tpm": self.tpm.per_minute if self.tpm else None, "roles": sorted(self.roles)}

    # -- adaptation ------------------------------------------------------------------------------

    def on_success(self, prompt_tokens: int, completion_tokens: int, estimate: int) -> None:
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        if self.tpm:
            self.tpm.take(prompt_tokens + completion_tokens - estimate)  # settle the estimate
        if self._limit < self.max_limit:
            self._limit = min(float(self.max_limit), self._limit + 1.0 / self._limit)  # +1 per window
            self._wake()

    def on_failure(self, kind: str) -> None:
        self.errors += 1
        if kind != "rate_limit":
            return
        self.rate_limited += 1
        now = time.monotonic()
        if now - self._last_decrease >= DECREASE_COOLDOWN_S:
            self._last_decrease = now
            self._limit = max(1.0, self._limit / 2)

    @asynccontextmanager
    async def backoff(self) -> AsyncIterator[None]:
        self.in_backoff += 1
        self.retries += 1
        try:
            yield
        finally:
            self.in_backoff -= 1

    async def sleep_backoff(self, seconds: float) -> None:
        """Tenacity's sleep: the call counts as "in backoff" on this endpoint while it waits."""
        async with self.backoff():
            await asyncio.sleep(seconds)

    def snapshot(self) -> EndpointStats:
        return EndpointStats(self.endpoint, tuple(sorted(self.roles)), self.limit, self.in_flight,
                             self.in_backoff, self.calls, self.errors, self.max_limit, self.queued,
                             self.rate_limited, self.retries, self.prompt_tokens, self.completion_tokens)


LimiterKey = tuple[str, str]
# Builds the limiter of an endpoint: (key, limit, rpm, tpm) -> limiter. None: a limiter of this process.
LimiterFactory = Callable[[LimiterKey, int, "int | None", "int | None"], EndpointLimiter]
_limiters: dict[LimiterKey, EndpointLimiter] = {}
_factory: LimiterFactory | None = None


def use_limiter_factory(factory: LimiterFactory | None) -> None:
    """Build the limiters of clients created from now on with `factory` (e.g. leases from limits
    that hold across a cluster); None goes back to limiters of this process. Forgets every limiter."""
    global _factory
    _factory = factory
    _limiters.clear()


def limiter_for(endpoint: str, key_env: str | None, limit: int, role: str, *, rpm: int | None = None,
                tpm: int | None = None) -> EndpointLimiter:
    key = (endpoint, key_env or "")
    lim = _limiters.get(key)
    if lim is None:
        lim = EndpointLimiter(endpoint, limit, rpm=rpm, tpm=tpm) if _factory is None else _factory(key, limit, rpm, tpm)
        _limiters[key] = lim
    else:
        lim.tighten(limit, rpm, tpm)
    lim.roles.add(role)
    return lim


def limiter_specs() -> dict[LimiterKey, dict[str, Any]]:
    """Every endpoint limiter of this process, as configured (see `EndpointLimiter.spec`)."""
    return {key: lim.spec() for key, lim in _limiters.items()}


def endpoint_stats() -> list[EndpointStats]:
    """Every endpoint this process has called or will call, with its live counters."""
    return [lim.snapshot() for lim in _limiters.values()]


def reset_limiters() -> None:
    """Forget every limiter (tests; a new run in the same process)."""
    _limiters.clear()
