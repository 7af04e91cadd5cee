"""Per-endpoint limits: AIMD concurrency, rpm/tpm budgets, live counters, cancellation."""

from __future__ import annotations

import asyncio
import time

import pytest

from awm_runtime.models import endpoint_stats, reset_limiters
from awm_runtime.models._limits import DECREASE_COOLDOWN_S, EndpointLimiter, limiter_for


@pytest.fixture(autouse=True)
def _fresh() -> None:
    reset_limiters()


async def test_concurrency_never_exceeds_the_limit() -> None:
    lim = EndpointLimiter("e", 3)
    peak = 0

    async def call() -> None:
        nonlocal peak
        async with lim.slot():
            peak = max(peak, lim.in_flight)
            await asyncio.sleep(0.01)

    await asyncio.gather(*(call() for _ in range(20)))
    assert peak == 3 and lim.in_flight == 0 and lim.calls == 20


async def test_a_429_halves_the_limit_once_per_cooldown_and_successes_grow_it_back() -> None:
    lim = EndpointLimiter("e", 16)
    lim.on_failure("rate_limit")
    lim.on_failure("rate_limit")  # the same burst: no second cut
    assert lim.limit == 8 and lim.rate_limited == 2 and lim.errors == 2
    for _ in range(9):
        lim.on_success(1, 1, 0)
    assert lim.limit == 9  # additive: about +1 per window of `limit` successes
    lim._last_decrease -= DECREASE_COOLDOWN_S
    lim.on_failure("rate_limit")
    assert lim.limit == 4
    lim.on_failure("server")
    assert lim.limit == 4 and lim.errors == 4


async def test_limit_never_drops_below_one_and_never_exceeds_max() -> None:
    lim = EndpointLimiter("e", 2)
    for _ in range(5):
        lim._last_decrease -= DECREASE_COOLDOWN_S
        lim.on_failure("rate_limit")
    assert lim.limit == 1
    for _ in range(100):
        lim.on_success(0, 0, 0)
    assert lim.limit == 2


async def test_a_lowered_limit_holds_new_calls_until_in_flight_drains() -> None:
    lim = EndpointLimiter("e", 4)
    release = asyncio.Event()
    entered = 0

    async def call() -> None:
        nonlocal entered
        async with lim.slot():
            entered += 1
            await release.wait()

    first = [asyncio.create_task(call()) for _ in range(4)]
    await asyncio.sleep(0.01)
    lim.on_failure("rate_limit")  # limit 4 -> 2 while 4 are in flight
    late = asyncio.create_task(call())
    await asyncio.sleep(0.01)
    assert entered == 4 and lim.queued == 1
    release.set()
    await asyncio.gather(*first, late)
    assert entered == 5 and lim.in_flight == 0


async def test_cancelled_waiter_does_not_leak_a_slot() -> None:
    lim = EndpointLimiter("e", 1)
    gate = asyncio.Event()

    async def hold() -> None:
        async with lim.slot():
            await gate.wait()

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0)
    waiter = asyncio.create_task(hold())
    await asyncio.sleep(0.01)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    gate.set()
    await holder
    assert lim.in_flight == 0 and lim.queued == 0
    async with lim.slot():
        assert lim.in_flight == 1


async def test_rpm_budget_paces_calls() -> None:
    lim = EndpointLimiter("e", 100, rpm=600)  # 10 per second, a burst of 10
    started = time.monotonic()
    for _ in range(15):
        async with lim.slot():
            pass
    assert time.monotonic() - started >= 0.4  # the 5 past the burst wait ~0.1 s each


async def test_tpm_budget_charges_actual_tokens() -> None:
    lim = EndpointLimiter("e", 100, tpm=6000)  # 100 tokens per second
    async with lim.slot(50) as slot:
        slot.succeeded(150, 50)  # 200 used, 50 estimated: the bucket goes into debt
    started = time.monotonic()
    async with lim.slot(10):
        pass
    assert time.monotonic() - started >= 0.9  # ~1.0 s until the debt of 100 tokens is repaid
    assert lim.prompt_tokens == 150 and lim.completion_tokens == 50


async def test_endpoints_share_one_limiter_per_key_and_keep_the_strictest_settings() -> None:
    a = limiter_for("http://x/v1", "K", 64, "policy")
    b = limiter_for("http://x/v1", "K", 8, "expert", rpm=60)
    c = limiter_for("http://x/v1", "OTHER", 64, "judge")
    assert a is b and a is not c and a.limit == 8 and a.rpm is not None
    stats = {s.endpoint + "|" + ",".join(s.roles): s for s in endpoint_stats()}
    assert set(stats) == {"http://x/v1|expert,policy", "http://x/v1|judge"}
    assert stats["http://x/v1|expert,policy"].max_limit == 8
