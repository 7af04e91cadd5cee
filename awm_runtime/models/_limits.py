"""Per-endpoint limits and live counters. One limiter per (endpoint, key variable): calls that
share a key share the provider's rate limit, whichever role makes them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EndpointStats:
    """A snapshot for the live view and the logs."""

    endpoint: str
    roles: tuple[str, ...]
    limit: int
    in_flight: int
    in_backoff: int
    calls: int
    errors: int


class EndpointLimiter:
    def __init__(self, endpoint: str, limit: int) -> None:
        self.endpoint = endpoint
        self.limit = limit
        self.roles: set[str] = set()
        self.in_flight = 0
        self.in_backoff = 0
        self.calls = 0
        self.errors = 0
        self._sem = asyncio.Semaphore(limit)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self._sem:
            self.in_flight += 1
            try:
                yield
            finally:
                self.in_flight -= 1
                self.calls += 1

    @asynccontextmanager
    async def backoff(self) -> AsyncIterator[None]:
        self.in_backoff += 1
        try:
            yield
        finally:
            self.in_backoff -= 1

    def snapshot(self) -> EndpointStats:
        return EndpointStats(self.endpoint, tuple(sorted(self.roles)), self.limit, self.in_flight,
                             self.in_backoff, self.calls, self.errors)


_limiters: dict[tuple[str, str], EndpointLimiter] = {}


def limiter_for(endpoint: str, key_env: str | None, limit: int, role: str) -> EndpointLimiter:
    key = (endpoint, key_env or "")
    lim = _limiters.get(key)
    if lim is None:
        lim = _limiters[key] = EndpointLimiter(endpoint, limit)
    lim.roles.add(role)
    return lim


def endpoint_stats() -> list[EndpointStats]:
    """Every endpoint this process has called or will call, with its live counters."""
    return [lim.snapshot() for lim in _limiters.values()]


def reset_limiters() -> None:
    """Forget every limiter (tests; a new run in the same process)."""
    _limiters.clear()
