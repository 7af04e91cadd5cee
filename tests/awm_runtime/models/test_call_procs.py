"""Model-call processes: litellm in child processes, with the parent's limits, retries and classes."""

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
    start_call_procs,
    stop_call_procs,
)
from awm_runtime.models._call_procs import call_proc_pids
from awm_runtime.testing import FakeOpenAI, Reply
from tests.procs import exists

KEY = "callproc-key-1234567890"
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALL_PROC_KEY", KEY)
    reset_limiters()


def client(server: FakeOpenAI, **extra: object) -> ModelClient:
    cfg = ModelConfig(alias="via-procs", model="openai/fake-model", api_base=server.url, api_key_env="CALL_PROC_KEY",
                      transport="litellm", timeout_s=60, backoff_s=0.01, **extra)  # type: ignore[arg-type]
    return ModelClient(cfg, "policy")


async def test_calls_go_through_call_procs_and_keep_classes_and_retry_after() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    script = [Reply.error(429, retry_after="0.3"), Reply(content=None, tool_calls=[call]), Reply.error(401)]
    with FakeOpenAI(key=KEY, script=script) as s:
        assert await start_call_procs(2) == 2
        c = client(s)
        started = time.perf_counter()
        reply = await c.complete(HI)
        assert time.perf_counter() - started >= 0.3 and reply.tool_calls == [call] and reply.usage.calls == 1
        with pytest.raises(ModelError) as info:
            await c.complete(HI)
        assert info.value.kind == "auth" and KEY not in str(info.value)
    assert s.requests[0]["_auth"] == f"Bearer {KEY}"  # the call proc read the key from its inherited environment


async def test_a_dead_call_proc_fails_its_calls_as_retryable_and_others_carry_on() -> None:
    with FakeOpenAI(key=KEY, default=Reply(content="late", delay_s=3.0)) as s:
        await start_call_procs(2)
        c = client(s)
        calls = asyncio.gather(*(c.complete(HI) for _ in range(4)))
        for _ in range(3000):  # until all four are at the server, in flight (not a guess at how long that takes)
            if len(s.requests) >= 4:
                break
            await asyncio.sleep(0.01)
        os.kill(call_proc_pids()[0], 9)
        replies = await calls
    assert [r.content for r in replies] == ["late"] * 4
    st = next(e for e in endpoint_stats() if e.endpoint == s.url)
    assert st.retries >= 1 and st.errors == st.retries and len(call_proc_pids()) == 2


async def test_stopping_reaps_every_call_proc() -> None:
    await start_call_procs(2)
    pids = call_proc_pids()
    assert len(pids) == 2 and all(exists(p) for p in pids)
    await stop_call_procs()
    assert call_proc_pids() == [] and not any(exists(p) for p in pids)


async def test_no_call_procs_when_nothing_calls_through_litellm() -> None:
    configs = [ModelConfig(model="sim/novice"), ModelConfig(model="hosted_vllm/q", api_base="http://gpu:8000/v1")]
    assert await start_call_procs(2, configs) == 0 and call_proc_pids() == []
    assert await start_call_procs(1, [*configs, ModelConfig(model="openai/gpt-4.1-mini")]) == 1


def test_auto_procs_starts_two_call_procs_even_on_two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    from awm_runtime.models._call_procs import auto_procs

    for cpus, expected in ((1, 0), (2, 2), (4, 2), (8, 4), (64, 4)):
        monkeypatch.setattr("os.cpu_count", lambda cpus=cpus: cpus)
        assert auto_procs() == expected
