"""The model client over real HTTP to our loopback OpenAI-compatible server, through both transports:
litellm, and the direct OpenAI-wire path that `auto` picks for self-hosted servers."""

from __future__ import annotations

import asyncio
import time

import pytest

from awm_runtime import ModelError
from awm_runtime.models import ModelClient, ModelConfig, endpoint_stats, reset_limiters
from awm_runtime.testing import FakeOpenAI, Reply

KEY = "k-policy-123456"
HI = [{"role": "user", "content": "hi"}]


TRANSPORT = ["litellm"]


@pytest.fixture(autouse=True, params=["litellm", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    TRANSPORT[0] = request.param
    return str(request.param)


def client(server: FakeOpenAI, role: str = "policy", **extra: object) -> ModelClient:
    fields: dict[str, object] = {"timeout_s": 10, "backoff_s": 0.01, "transport": TRANSPORT[0], **extra}
    cfg = ModelConfig(alias=f"fake-{role}", model="openai/fake-model", api_base=server.url, api_key_env="FAKE_KEY",
                      **fields)  # type: ignore[arg-type]
    return ModelClient(cfg, role)


def stats_for(server: FakeOpenAI) -> object:
    return next(e for e in endpoint_stats() if e.endpoint == server.url)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_KEY", KEY)
    reset_limiters()


async def test_text_and_native_tool_calls_arrive_intact() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "list_notes", "arguments": '{"title": "x"}'}}
    script = [Reply(content="hello"), Reply(content=None, tool_calls=[call])]
    with FakeOpenAI(key=KEY, script=script) as s:
        c = client(s)
        first = await c.complete(HI)
        second = await c.complete([{"role": "user", "content": "go"}], tools=[{"type": "function", "function": {
            "name": "list_notes", "parameters": {"type": "object", "properties": {}}}}])
    assert first.content == "hello" and first.usage.calls == 1 and first.usage.prompt_tokens >= 0
    assert second.tool_calls == [call] and second.finish_reason == "tool_calls"
    assert s.requests[1]["tools"][0]["function"]["name"] == "list_notes"
    assert all(r["_auth"] == f"Bearer {KEY}" for r in s.requests)


async def test_a_tool_set_sent_again_arrives_whole_with_a_world_s_surrogate_replaced() -> None:
    """A scenario's tools as the native protocol builds them, once per tool set. The direct transport encodes
    their JSON once and splices it into each body; what arrives is what a whole encoding gives, call after call.
    A lone surrogate in a world's tool text goes out as U+FFFD through either transport, never as an error."""
    from awm_runtime import ToolSpec
    from awm_runtime.policies.protocols import ToolProtocol

    specs = [ToolSpec(name=f"tool_{i}", description="d\ud800" if i == 3 else "d") for i in range(40)]
    tools = ToolProtocol("native").native_tools(specs)
    with FakeOpenAI(key=KEY) as s:
        c = client(s)
        for turn in range(3):
            await c.complete([{"role": "user", "content": f"turn {turn}"}], tools=tools, params={"temperature": 0})
    assert len(s.requests) == 3
    for turn, request in enumerate(s.requests):
        assert request["messages"] == [{"role": "user", "content": f"turn {turn}"}] and request["temperature"] == 0
        assert [t["function"]["name"] for t in request["tools"]] == [f"tool_{i}" for i in range(40)]
        assert request["tools"][3]["function"]["description"] == "d\ufffd"


async def test_params_from_config_and_call_reach_the_server() -> None:
    with FakeOpenAI(key=KEY) as s:
        await client(s, params={"temperature": 0.3, "max_tokens": 77}).complete(HI, params={"seed": 5})
    assert (s.requests[0]["temperature"], s.requests[0]["max_tokens"], s.requests[0]["seed"]) == (0.3, 77, 5)


async def test_latency_is_measured() -> None:
    with FakeOpenAI(key=KEY, default=Reply(content="slow", delay_s=0.3)) as s:
        reply = await client(s).complete(HI)
    assert reply.latency_s >= 0.3


async def test_429_with_retry_after_is_honoured_then_succeeds() -> None:
    script = [Reply.error(429, "slow down", retry_after="0.4"), Reply(content="fine")]
    with FakeOpenAI(key=KEY, script=script) as s:
        started = time.perf_counter()
        reply = await client(s).complete(HI)
        waited = time.perf_counter() - started
    assert reply.content == "fine" and len(s.requests) == 2 and waited >= 0.4
    st = stats_for(s)
    assert st.rate_limited == 1 and st.retries == 1 and st.in_backoff == 0  # type: ignore[attr-defined]


async def test_a_burst_of_500s_is_ridden_out_with_backoff() -> None:
    script = [Reply.error(500), Reply.error(502), Reply.error(503), Reply(content="back")]
    with FakeOpenAI(key=KEY, script=script) as s:
        reply = await client(s).complete(HI)
    assert reply.content == "back" and len(s.requests) == 4


async def test_exhausted_retries_raise_the_class_with_the_attempt_count() -> None:
    with FakeOpenAI(key=KEY, default=Reply.error(500, "kaput")) as s, pytest.raises(ModelError) as info:
        await client(s, retries={"server": 2}).complete(HI)
    assert info.value.kind == "server" and info.value.error_class == "ModelError.server"
    assert len(s.requests) == 3 and "after 3 attempts" in str(info.value)


async def test_rate_limits_stop_at_the_total_deadline() -> None:
    server = FakeOpenAI(key=KEY, default=Reply.error(429, "busy", retry_after="0.4"))
    with server as s, pytest.raises(ModelError) as info:
        await client(s, retry_deadline_s=1.0).complete(HI)
    assert info.value.kind == "rate_limit" and "deadline" in str(info.value)
    # 0.4 s per refusal within a 1 s deadline: 2 to 4 attempts; a retry past the deadline would be a 5th (the
    # attempts are the clock here, not the wall time, which load stretches)
    assert 2 <= len(s.requests) <= 4


@pytest.mark.parametrize(("status", "kind"), [(400, "bad_request"), (401, "auth"), (403, "auth"),
                                              (404, "not_found")])
async def test_client_errors_are_not_retried(status: int, kind: str) -> None:
    with FakeOpenAI(key=KEY, script=[Reply.error(status, "nope")]) as s, pytest.raises(ModelError) as info:
        await client(s).complete(HI)
    assert info.value.kind == kind and len(s.requests) == 1


@pytest.mark.parametrize(("first", "kind"), [
    (Reply.error(400, "content_filter: the response was filtered"), "content_filter"),
    (Reply.error(400, "API key not valid. Please pass a valid API key."), "auth"),  # Gemini's wrong key
    (Reply.error(429, "Your budget has been exceeded"), "bad_request"),  # a spent budget: waiting cannot help
])
async def test_refusals_that_no_retry_can_change_are_classed_and_not_retried(first: Reply, kind: str) -> None:
    with FakeOpenAI(key=KEY, script=[first, Reply(content="fine")]) as s, pytest.raises(ModelError) as info:
        await client(s).complete(HI)
    assert info.value.kind == kind and len(s.requests) == 1


@pytest.mark.parametrize("first", [
    Reply.error(408, "request timeout"),
    Reply.error(429, "busy", retry_after="soon"),  # a Retry-After that is not seconds: the backoff decides
    Reply.error(429, 'quota exhausted, "retryDelay": "0.1s"'),  # Gemini's RetryInfo, in the body
])
async def test_passing_failures_are_retried(first: Reply) -> None:
    with FakeOpenAI(key=KEY, script=[first, Reply(content="fine")]) as s:
        reply = await client(s).complete(HI)
    assert reply.content == "fine" and len(s.requests) == 2
    assert [e.retries for e in endpoint_stats() if e.endpoint == s.url] == [1]


async def test_context_overflow_is_not_retried() -> None:
    overflow = Reply.error(400, "This model's maximum context length is 8192 tokens. However, your messages "
                                "resulted in 9000 tokens. context_length_exceeded")
    with FakeOpenAI(key=KEY, script=[overflow]) as s, pytest.raises(ModelError) as info:
        await client(s).complete(HI)
    assert info.value.kind == "context" and len(s.requests) == 1


async def test_a_hang_is_a_timeout_and_retried_within_bounds() -> None:
    with FakeOpenAI(key=KEY, script=[Reply(hang=True)], max_lifetime_s=30) as s:
        started = time.perf_counter()
        reply = await client(s, timeout_s=1).complete(HI)
    # The hang ended at this call's 1-s timeout: the default 10 s (or the hang's 30-s lifetime) would take longer.
    assert reply.content == "ok" and len(s.requests) == 2 and time.perf_counter() - started < 10


async def test_hangs_until_the_timeout_budget_is_spent() -> None:
    with FakeOpenAI(key=KEY, default=Reply(hang=True), max_lifetime_s=30) as s, pytest.raises(ModelError) as info:
        await client(s, timeout_s=1, retries={"timeout": 1}).complete(HI)
    assert info.value.kind == "timeout" and len(s.requests) == 2


async def test_malformed_body_is_a_typed_error_not_a_crash() -> None:
    with FakeOpenAI(key=KEY, default=Reply(body="{not json", status=200)) as s, pytest.raises(ModelError) as info:
        await client(s, retries={"server": 1, "connection": 1}).complete(HI)
    assert info.value.kind in ("server", "connection", "fatal", "bad_request")
    assert len(s.requests) <= 2


async def test_connection_refused_is_retried_then_reported() -> None:
    with FakeOpenAI(key=KEY) as s:
        url = s.url
    cfg = ModelConfig(alias="gone", model="openai/fake-model", api_base=url, api_key_env="FAKE_KEY", timeout_s=5,
                      backoff_s=0.01, retries={"connection": 1}, transport=TRANSPORT[0])
    with pytest.raises(ModelError) as info:
        await ModelClient(cfg, "expert").complete(HI)
    assert info.value.kind == "connection" and info.value.role == "expert"


async def test_wrong_key_is_auth_error_and_key_never_in_message() -> None:
    with FakeOpenAI(key="the-right-key") as s, pytest.raises(ModelError) as info:
        await client(s).complete(HI)
    assert info.value.kind == "auth" and KEY not in str(info.value)


async def test_endpoint_stats_count_calls_and_tokens() -> None:
    with FakeOpenAI(key=KEY) as s:
        c = client(s)
        for _ in range(3):
            await c.complete(HI)
    st = stats_for(s)
    assert st.calls == 3 and st.in_flight == 0 and st.roles == ("policy",)  # type: ignore[attr-defined]
    assert st.completion_tokens > 0 and st.errors == 0  # type: ignore[attr-defined]


async def test_in_flight_and_backoff_are_visible_while_calls_run() -> None:
    script = [Reply.error(429, retry_after="0.5"), *[Reply(delay_s=0.5) for _ in range(4)]]
    with FakeOpenAI(key=KEY, script=script) as s:
        c = client(s)
        calls = asyncio.gather(*(c.complete(HI) for _ in range(4)))
        for _ in range(3000):  # until the 429 is back: litellm's first call in a fresh process takes seconds
            await asyncio.sleep(0.01)
            during = stats_for(s)
            if during.in_backoff:  # type: ignore[attr-defined]
                break
        await calls
    assert during.in_flight == 3 and during.in_backoff == 1  # type: ignore[attr-defined]


async def test_configured_prices_give_cost() -> None:
    with FakeOpenAI(key=KEY, default=Reply(usage={"prompt_tokens": 1000, "completion_tokens": 500,
                                                  "total_tokens": 1500})) as s:
        reply = await client(s, input_cost_per_mtok=2.0, output_cost_per_mtok=8.0).complete(HI)
    assert reply.usage.cost_usd == pytest.approx(1000 * 2e-6 + 500 * 8e-6)


async def test_litellm_cost_map_prices_known_models() -> None:
    with FakeOpenAI(key=KEY, models=("gpt-4.1-mini",), default=Reply(usage={
            "prompt_tokens": 1_000_000, "completion_tokens": 0, "total_tokens": 1_000_000})) as s:
        cfg = ModelConfig(alias="mini", model="openai/gpt-4.1-mini", api_base=s.url, api_key_env="FAKE_KEY",
                          transport=TRANSPORT[0])
        reply = await ModelClient(cfg, "expert").complete(HI)
    assert reply.usage.cost_usd > 0  # from litellm's local cost map, no price configured


async def test_the_deadline_starts_when_a_call_is_sent_not_while_it_queues_for_a_slot() -> None:
    """One slot, three calls of 1.2 s at once, a 3 s deadline per call: the third call waits 2.4 s behind our
    own limiter, which must not count (issue 32: a slow model behind a busy endpoint ended calls as
    model_error, their last attempt cut to what was left of the deadline)."""
    with FakeOpenAI(key=KEY, default=Reply(content="slow", delay_s=1.2)) as s:
        c = client(s, max_concurrency=1, timeout_s=3, retry_deadline_s=3)
        started = time.monotonic()
        replies = await asyncio.gather(*(c.complete(HI) for _ in range(3)))
        took = time.monotonic() - started
    assert [r.content for r in replies] == ["slow"] * 3
    assert took >= 3.5 and s.max_in_flight == 1  # they really queued, one at a time
    assert len(s.requests) == 3  # one attempt each: no timeout was retried


async def test_the_deadline_still_bounds_a_call_that_is_out() -> None:
    """Queue time is not the call's, but time on the wire is: a hanging server still ends the call."""
    with FakeOpenAI(key=KEY, default=Reply(hang=True)) as s:
        c = client(s, max_concurrency=1, timeout_s=1, retry_deadline_s=1.5, retries={"timeout": 5})
        with pytest.raises(ModelError) as info:
            await c.complete(HI)
    assert info.value.kind == "timeout" and "deadline" in str(info.value)
    assert len(s.requests) <= 2  # the 1.5-s deadline ended it: the 5 retries allowed would make 6 requests


@pytest.mark.parametrize("usage", [{"prompt_tokens": -1_000_000, "completion_tokens": 10},
                                   {"prompt_tokens": 100, "completion_tokens": 10**12}])
async def test_invalid_usage_is_the_providers_error_never_priced_and_said_once(usage: dict[str, int]) -> None:
    """A negative or absurd count from a provider or proxy would make the cost negative (or astronomic):
    the call's tokens count as none, its cost is unknown (never $0, never negative), one warning per alias."""
    import structlog

    with FakeOpenAI(key=KEY, default=Reply(usage={**usage, "total_tokens": 0})) as s:
        c = client(s, input_cost_per_mtok=2.0, output_cost_per_mtok=8.0)
        with structlog.testing.capture_logs() as logs:
            replies = [await c.complete(HI) for _ in range(3)]
    for reply in replies:
        assert reply.content == "ok" and reply.usage_problem
        assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.cost_usd) == (0, 0, 0.0)
        assert reply.usage.cost_known is False
    warned = [e for e in logs if e["event"] == "provider_usage_invalid"]
    assert len(warned) == 1 and warned[0]["alias"] == "fake-policy" and c.usage_problems == 3
    assert "negative" in warned[0]["problem"] or "more than any context" in warned[0]["problem"]


async def test_malformed_token_data_fails_the_attempt_as_the_servers_error() -> None:
    """Issue 51: a logprob above 0 (or ids that do not match the logprobs) is the server's error, named."""
    bad = {"logprobs": {"content": [{"token": "ok", "logprob": 2.5, "bytes": None, "top_logprobs": []}]}}
    with FakeOpenAI(key=KEY, default=Reply(extra_choice=bad)) as s, pytest.raises(ModelError) as info:
        await client(s, max_retries=0).complete(HI)
    assert info.value.kind == "server" and "logprobs: logprob 2.5 is not a log-probability" in str(info.value)
