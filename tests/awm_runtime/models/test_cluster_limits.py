"""Cluster-wide limits: one LimitsService leasing slots to many holders; lapsed and cancelled leases;
model clients of several "processes" against one loopback server never exceed the alias's limit."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from awm_runtime.models import LimitsService, ModelClient, ModelConfig, reset_limiters, use_cluster_limits
from awm_runtime.models import _cluster_limits as cluster
from awm_runtime.models._limits import LimiterKey
from awm_runtime.testing import FakeOpenAI, Reply

KEY: LimiterKey = ("http://e/v1", "")


def service(limit: int = 2, **extra: Any) -> LimitsService:
    return LimitsService({KEY: {"endpoint": KEY[0], "limit": limit, "roles": ["policy"], **extra}})


class InProcess:
    """A LeaseSource that reaches the service directly, as a Ray actor handle would, for one holder."""

    def __init__(self, svc: LimitsService, holder: str) -> None:
        self.svc, self.holder = svc, holder
        self.pending: set[asyncio.Task[Any]] = set()

    async def acquire(self, key: LimiterKey, lease_id: str, estimate_tokens: int) -> None:
        assert await self.svc.acquire(key, self.holder, lease_id, estimate_tokens)

    def release(self, lease_id: str, outcome: str, prompt_tokens: int, completion_tokens: int) -> None:
        self.svc.release(lease_id, outcome, prompt_tokens, completion_tokens)

    def cancel(self, lease_id: str) -> None:
        self.svc.cancel(lease_id)


@pytest.fixture(autouse=True)
def _local_limits() -> Any:
    yield
    use_cluster_limits(None)
    reset_limiters()


async def test_holders_together_never_exceed_the_limit_and_reach_it() -> None:
    svc = service(limit=3)
    held = peak = 0

    async def call(holder: str, i: int) -> None:
        nonlocal held, peak
        lease = f"{holder}-{i}"
        assert await svc.acquire(KEY, holder, lease)
        held += 1
        peak = max(peak, held)
        await asyncio.sleep(0.005)
        held -= 1
        svc.release(lease, "ok", 1, 1)

    await asyncio.gather(*(call(h, i) for h in ("a", "b", "c") for i in range(10)))
    assert peak == 3
    snap = svc.snapshot()[0]
    assert snap.in_flight == 0 and snap.calls == 30 and snap.prompt_tokens == 30


async def test_a_forgotten_holder_returns_its_slots_and_its_waiters_give_up() -> None:
    svc = service(limit=2)
    assert await svc.acquire(KEY, "dead", "d1") and await svc.acquire(KEY, "dead", "d2")
    dead_waiter = asyncio.create_task(svc.acquire(KEY, "dead", "d3"))
    live_waiter = asyncio.create_task(svc.acquire(KEY, "live", "l1"))
    await asyncio.sleep(0.01)
    assert not live_waiter.done()
    assert svc.forget("dead") == 2
    assert await dead_waiter is False and await live_waiter is True
    assert svc.snapshot()[0].in_flight == 1 and svc.stats()["lapsed"] == 2
    assert await svc.acquire(KEY, "dead", "d4") is False  # a lost holder gets no new lease


async def test_a_holder_that_stops_renewing_lapses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster, "LEASE_TTL_S", 0.2)
    monkeypatch.setattr(cluster, "_SWEEP_EVERY_S", 0.02)
    svc = service(limit=1)
    assert await svc.acquire(KEY, "silent", "s1")
    waiter = asyncio.create_task(svc.acquire(KEY, "alive", "a1"))
    for _ in range(10):  # "alive" renews; "silent" (a dead node) does not
        svc.renew("alive")
        await asyncio.sleep(0.05)
    async with asyncio.timeout(2):
        assert await waiter is True
    assert svc.stats()["lapsed"] == 1


async def test_a_cancel_before_or_during_the_wait_costs_no_slot() -> None:
    svc = service(limit=1)
    svc.cancel("early")  # reaches the service before its acquire does
    assert await svc.acquire(KEY, "h", "early") is False
    assert await svc.acquire(KEY, "h", "held")
    waiting = asyncio.create_task(svc.acquire(KEY, "h", "waiting"))
    await asyncio.sleep(0.01)
    svc.cancel("waiting")
    assert await waiting is False
    svc.release("held", "ok")
    assert svc.snapshot()[0].in_flight == 0
    assert await svc.acquire(KEY, "h", "next")


async def test_a_429_anywhere_halves_the_limit_for_everyone() -> None:
    svc = service(limit=8)
    assert await svc.acquire(KEY, "a", "x")
    svc.release("x", "rate_limit")
    snap = svc.snapshot()[0]
    assert snap.limit == 4 and snap.rate_limited == 1 and snap.max_limit == 8


async def test_model_clients_of_two_processes_share_the_alias_limit_at_the_server() -> None:
    svc = service(limit=2)
    with FakeOpenAI(default=Reply(content="hi", delay_s=0.05), max_lifetime_s=60) as server:
        config = ModelConfig(alias="loop", model="openai/fake-model", api_base=server.url, max_concurrency=2)
        svc = LimitsService({(config.endpoint, ""): {"endpoint": config.endpoint, "limit": 2}})
        clients = []
        for holder in ("node-a", "node-b"):  # each "process" builds its own limiter, as each Ray actor does
            use_cluster_limits(InProcess(svc, holder))
            clients.append(ModelClient(config, "policy"))
        await asyncio.gather(*(c.complete([{"role": "user", "content": "x"}]) for c in clients for _ in range(8)))
    assert server.max_in_flight == 2 and server.in_flight == 0
    assert svc.snapshot()[0].calls == 16 and svc.stats()["leases"] == 0
