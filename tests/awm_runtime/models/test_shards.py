"""Model-call shards: litellm in child processes, with the parent's limits, retries and classes."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from awm_runtime import ModelError
from awm_runtime.models import (
    ModelClient,
    ModelConfig,
    endpoint_stats,
    reset_limiters,
    start_shards,
    stop_shards,
)
from awm_runtime.models._shards import shard_pids
from awm_runtime.testing import FakeOpenAI, Reply

KEY = "shard-key-1234567890"
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHARD_KEY", KEY)
    reset_limiters()


def client(server: FakeOpenAI, **extra: object) -> ModelClient:
    cfg = ModelConfig(alias="sharded", model="openai/fake-model", api_base=server.url, api_key_env="SHARD_KEY",
                      transport="litellm", timeout_s=10, backoff_s=0.01, **extra)  # type: ignore[arg-type]
    return ModelClient(cfg, "policy")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_calls_go_through_shards_and_keep_classes_and_retry_after() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    script = [Reply.error(429, retry_after="0.3"), Reply(content=None, tool_calls=[call]), Reply.error(401)]
    with FakeOpenAI(key=KEY, script=script) as s:
        assert await start_shards(2) == 2
        c = client(s)
        started = time.perf_counter()
        reply = await c.complete(HI)
        assert time.perf_counter() - started >= 0.3 and reply.tool_calls == [call] and reply.usage.calls == 1
        with pytest.raises(ModelError) as info:
            await c.complete(HI)
        assert info.value.kind == "auth" and KEY not in str(info.value)
    assert s.requests[0]["_auth"] == f"Bearer {KEY}"  # the shard read the key from its inherited environment


async def test_a_dead_shard_fails_its_calls_as_retryable_and_others_carry_on() -> None:
    with FakeOpenAI(key=KEY, default=Reply(content="late", delay_s=1.0)) as s:
        await start_shards(2)
        c = client(s)
        calls = asyncio.gather(*(c.complete(HI) for _ in range(4)))
        await asyncio.sleep(0.5)
        os.kill(shard_pids()[0], 9)
        replies = await calls
    assert [r.content for r in replies] == ["late"] * 4
    st = next(e for e in endpoint_stats() if e.endpoint == s.url)
    assert st.retries >= 1 and st.errors == st.retries and len(shard_pids()) == 2


async def test_stopping_reaps_every_shard() -> None:
    await start_shards(2)
    pids = shard_pids()
    assert len(pids) == 2 and all(alive(p) for p in pids)
    await stop_shards()
    assert shard_pids() == [] and not any(alive(p) for p in pids)


async def test_no_shards_when_nothing_calls_through_litellm() -> None:
    configs = [ModelConfig(model="sim/novice"), ModelConfig(model="hosted_vllm/q", api_base="http://gpu:8000/v1")]
    assert await start_shards(2, configs) == 0 and shard_pids() == []
    assert await start_shards(1, [*configs, ModelConfig(model="openai/gpt-4.1-mini")]) == 1


def test_auto_procs_starts_two_shards_even_on_two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    from awm_runtime.models._shards import auto_procs

    for cpus, expected in ((1, 0), (2, 2), (4, 2), (8, 4), (64, 4)):
        monkeypatch.setattr("os.cpu_count", lambda cpus=cpus: cpus)
        assert auto_procs() == expected
