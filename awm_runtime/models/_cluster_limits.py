"""Endpoint limits that hold across processes and machines: one LimitsService holds every endpoint's
limiter (concurrency with AIMD, rpm, tpm) and hands out leases; each process admits an attempt only
with a lease (LeasedLimiter) and reports how it went when it gives the lease back.

A lease lapses when its holder stops renewing (a dead node) or when the holder is forgotten, so
a dead process's slots return. Nothing here imports Ray: the service runs inside whatever hosts it
(a named Ray actor, see scheduler/_ray.py), and processes reach it through a LeaseSource.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from awm_runtime.models._limits import EndpointLimiter, EndpointStats, LimiterKey, Slot, use_limiter_factory

# A holder that has not renewed for this long is taken for dead and its leases return.
LEASE_TTL_S = 15.0
# Holders renew this often (well inside the TTL, so a busy loop does not lose its leases).
RENEW_EVERY_S = 3.0
_SWEEP_EVERY_S = 1.0
_CANCELLED_MEMORY = 10_000


class LeaseSource(Protocol):
    """How a process reaches the LimitsService (e.g. through a Ray actor handle)."""

    async def acquire(self, key: LimiterKey, lease_id: str, estimate_tokens: int) -> None:
        """Returns once the lease is granted; raises AttemptError when the service is unreachable."""
        ...

    def release(self, lease_id: str, outcome: str, prompt_tokens: int, completion_tokens: int) -> None:
        """Give a lease back (without waiting): `outcome` is "ok", an error kind, or "cancelled"."""
        ...

    def cancel(self, lease_id: str) -> None:
        """The caller stopped waiting for this lease: drop it, granted or not (without waiting)."""
        ...


@dataclass(slots=True)
class _Lease:
    key: LimiterKey
    holder: str
    slot: Slot


class LimitsService:
    """Every endpoint's limiter for a whole run, handed out as leases to many processes.

    Built from `limiter_specs()` of the process that planned the run: the same limits (after the
    strictest-alias tightening) with the same behaviour: first come first served, AIMD on 429s."""

    def __init__(self, specs: dict[LimiterKey, dict[str, Any]]) -> None:
        self._limiters: dict[LimiterKey, EndpointLimiter] = {}
        for key, spec in specs.items():
            lim = EndpointLimiter(spec["endpoint"], spec["limit"], rpm=spec.get("rpm"), tpm=spec.get("tpm"))
            lim.roles.update(spec.get("roles", ()))
            self._limiters[tuple(key)] = lim  # type: ignore[index]
        self._leases: dict[str, _Lease] = {}
        self._waiting: dict[str, tuple[str, asyncio.Task[Any]]] = {}
        self._cancelled: dict[str, None] = {}  # cancels that arrived before their acquire (ordered, bounded)
        self._seen: dict[str, float] = {}
        self._gone: set[str] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self.lapsed = 0  # leases returned because their holder died or was forgotten

    async def acquire(self, key: LimiterKey, holder: str, lease_id: str, estimate_tokens: int = 0) -> bool:
        """Wait for budget and a slot on `key`'s endpoint; False if the lease was cancelled meanwhile."""
        self._start_sweeper()
        self._seen.setdefault(holder, time.monotonic())
        if lease_id in self._cancelled or holder in self._gone:
            self._cancelled.pop(lease_id, None)
            return False
        lim = self._limiters[tuple(key)]  # type: ignore[index]
        task = asyncio.current_task()
        assert task is not None
        self._waiting[lease_id] = (holder, task)
        try:
            slot = await lim.admit(estimate_tokens)
        except asyncio.CancelledError:
            if lease_id in self._waiting:  # not ours to swallow: the host itself is cancelling us
                raise
            return False
        finally:
            self._waiting.pop(lease_id, None)
        if holder in self._gone:
            lim.finish()
            return False
        self._leases[lease_id] = _Lease(tuple(key), holder, slot)  # type: ignore[arg-type]
        return True

    def release(self, lease_id: str, outcome: str = "cancelled", prompt_tokens: int = 0,
                completion_tokens: int = 0) -> None:
        lease = self._leases.pop(lease_id, None)
        if lease is None:
            return
        if outcome == "ok":
            lease.slot.succeeded(prompt_tokens, completion_tokens)
        elif outcome != "cancelled":
            lease.slot.failed(outcome)  # a 429 halves the endpoint's limit for the whole cluster
        self._limiters[lease.key].finish()

    def cancel(self, lease_id: str) -> None:
        waiting = self._waiting.pop(lease_id, None)
        if waiting is not None:
            waiting[1].cancel()
        elif lease_id in self._leases:
            self.release(lease_id)
        else:
            self._cancelled[lease_id] = None
            while len(self._cancelled) > _CANCELLED_MEMORY:
                self._cancelled.pop(next(iter(self._cancelled)))

    def renew(self, holder: str) -> None:
        """The holder is alive: its leases stay valid for another LEASE_TTL_S."""
        self._start_sweeper()
        if holder not in self._gone:
            self._seen[holder] = time.monotonic()

    def forget(self, holder: str) -> int:
        """The holder is dead (or must be treated so): return its leases and drop its waiters."""
        self._gone.add(holder)
        self._seen.pop(holder, None)
        for lease_id, (who, task) in list(self._waiting.items()):
            if who == holder:
                del self._waiting[lease_id]
                task.cancel()
        mine = [lid for lid, lease in self._leases.items() if lease.holder == holder]
        for lease_id in mine:
            self.release(lease_id)
        self.lapsed += len(mine)
        return len(mine)

    def snapshot(self) -> list[EndpointStats]:
        return [lim.snapshot() for lim in self._limiters.values()]

    def stats(self) -> dict[str, Any]:
        return {"leases": len(self._leases), "waiting": len(self._waiting), "holders": len(self._seen),
                "lapsed": self.lapsed}

    def _start_sweeper(self) -> None:
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep())

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(_SWEEP_EVERY_S)
            now = time.monotonic()
            for holder in [h for h, seen in self._seen.items() if now - seen > LEASE_TTL_S]:
                self.forget(holder)


class _LeasedSlot(Slot):
    __slots__ = ("outcome",)

    def __init__(self, lim: LeasedLimiter, estimate: int) -> None:
        super().__init__(lim, estimate)
        self.outcome: tuple[str, int, int] = ("cancelled", 0, 0)

    def succeeded(self, prompt_tokens: int, completion_tokens: int) -> None:
        self.outcome = ("ok", prompt_tokens, completion_tokens)
        super().succeeded(prompt_tokens, completion_tokens)

    def failed(self, kind: str) -> None:
        self.outcome = (kind, 0, 0)
        super().failed(kind)


class LeasedLimiter(EndpointLimiter):
    """An endpoint limiter of one process whose admission is a lease from the LimitsService.

    Its own counters (in flight, in backoff, calls, tokens) describe this process's share; the
    limit, queue and AIMD state that matter live in the service."""

    def __init__(self, key: LimiterKey, source: LeaseSource, limit: int, *, rpm: int | None = None,
                 tpm: int | None = None) -> None:
        super().__init__(key[0], limit, rpm=rpm, tpm=tpm)
        self.key = key
        self.source = source

    @asynccontextmanager
    async def slot(self, estimate_tokens: int = 0) -> AsyncIterator[Slot]:
        lease_id = uuid.uuid4().hex
        self.queued += 1
        try:
            await self.source.acquire(self.key, lease_id, estimate_tokens)
        except BaseException:
            self.source.cancel(lease_id)
            raise
        finally:
            self.queued -= 1
        slot = _LeasedSlot(self, estimate_tokens)
        self.in_flight += 1
        try:
            yield slot
        finally:
            self.in_flight -= 1
            self.calls += 1
            self.source.release(lease_id, *slot.outcome)

    def on_success(self, prompt_tokens: int, completion_tokens: int, estimate: int) -> None:
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens

    def on_failure(self, kind: str) -> None:
        self.errors += 1
        if kind == "rate_limit":
            self.rate_limited += 1


def use_cluster_limits(source: LeaseSource | None) -> None:
    """Clients created from now on admit their attempts with leases from `source` (None: local limits)."""
    if source is None:
        use_limiter_factory(None)
        return

    def build(key: LimiterKey, limit: int, rpm: int | None, tpm: int | None) -> EndpointLimiter:
        return LeasedLimiter(key, source, limit, rpm=rpm, tpm=tpm)

    use_limiter_factory(build)
