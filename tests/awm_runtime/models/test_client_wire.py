"""The model client over real HTTP: litellm to our loopback OpenAI-compatible server."""

from __future__ import annotations

import time

import pytest

from awm_runtime import ModelError
from awm_runtime.models import ModelClient, ModelConfig, endpoint_stats, reset_limiters
from awm_runtime.testing import FakeOpenAI, Reply


def client(server: FakeOpenAI, role: str = "policy", **extra: object) -> ModelClient:
    cfg = ModelConfig(alias=f"fake-{role}", model="openai/fake-model", api_base=server.url, api_key_env="FAKE_KEY",
                      timeout_s=10, **extra)  # type: ignore[arg-type]
    return ModelClient(cfg, role)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_KEY", "k-policy-123456")
    reset_limiters()


async def test_text_and_native_tool_calls_arrive_intact() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "list_notes", "arguments": '{"title": "x"}'}}
    script = [Reply(content="hello"), Reply(content=None, tool_calls=[call])]
    with FakeOpenAI(key="k-policy-123456", script=script) as s:
        c = client(s)
        first = await c.complete([{"role": "user", "content": "hi"}])
        second = await c.complete([{"role": "user", "content": "go"}], tools=[{"type": "function", "function": {
            "name": "list_notes", "parameters": {"type": "object", "properties": {}}}}])
    assert first.content == "hello" and first.usage.calls == 1 and first.usage.prompt_tokens >= 0
    assert second.tool_calls == [call]
    assert s.requests[1]["tools"][0]["function"]["name"] == "list_notes"
    assert all(r["_auth"] == "Bearer k-policy-123456" for r in s.requests)


async def test_429_with_retry_after_is_honoured_then_succeeds() -> None:
    script = [Reply.error(429, "slow down", retry_after="0.3"), Reply(content="fine")]
    with FakeOpenAI(key="k-policy-123456", script=script) as s:
        started = time.perf_counter()
        reply = await client(s).complete([{"role": "user", "content": "hi"}])
        waited = time.perf_counter() - started
    assert reply.content == "fine" and len(s.requests) == 2 and waited >= 0.3


async def test_400_is_not_retried_and_is_a_typed_error() -> None:
    server = FakeOpenAI(key="k-policy-123456", script=[Reply.error(400, "bad request")])
    with server as s, pytest.raises(ModelError) as info:
        await client(s).complete([{"role": "user", "content": "hi"}])
    assert info.value.kind == "bad_request" and len(s.requests) == 1


async def test_wrong_key_is_auth_error_and_key_never_in_message() -> None:
    with FakeOpenAI(key="the-right-key") as s, pytest.raises(ModelError) as info:
        await client(s).complete([{"role": "user", "content": "hi"}])
    assert info.value.kind == "auth" and "k-policy-123456" not in str(info.value)


async def test_endpoint_stats_count_calls() -> None:
    with FakeOpenAI(key="k-policy-123456") as s:
        c = client(s)
        for _ in range(3):
            await c.complete([{"role": "user", "content": "hi"}])
    stats = [e for e in endpoint_stats() if e.endpoint == s.url]
    assert stats and stats[0].calls == 3 and stats[0].in_flight == 0 and stats[0].roles == ("policy",)
