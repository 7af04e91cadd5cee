"""The Anthropic and Gemini loopback servers, through litellm as a run calls them: tool calls round-trip,
usage and cost arrive, and each provider's error bodies land in the retry class they deserve."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from awm_runtime import ModelError
from awm_runtime.models import ModelClient, ModelConfig, reset_limiters
from awm_runtime.testing import FakeAnthropic, FakeGemini, Reply, storm

KEY = "wire-key-0123456789"
TOOLS = [{"type": "function", "function": {"name": "get_note", "description": "Read one note.", "parameters": {
    "type": "object", "properties": {"note_id": {"type": "integer"}}, "required": ["note_id"]}}}]
ASK = [{"role": "system", "content": "You keep notes."}, {"role": "user", "content": "Read note 3."}]
CALL = Reply(content=None, tool_calls=[{"id": "c1", "type": "function",
                                        "function": {"name": "get_note", "arguments": '{"note_id": 3}'}}])
WIRES: dict[str, tuple[Any, str]] = {"anthropic": (FakeAnthropic, "claude-sonnet-4-5-20250929"),
                                     "gemini": (FakeGemini, "gemini-2.5-flash")}


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIRE_KEY", KEY)
    reset_limiters()


def client(wire: str, url: str, **extra: Any) -> ModelClient:
    model = WIRES[wire][1]
    settings: dict[str, Any] = {"timeout_s": 5, "backoff_s": 0.01, **extra}
    return ModelClient(ModelConfig(alias=wire, model=f"{wire}/{model}", api_base=url, api_key_env="WIRE_KEY",
                                   **settings), "expert")


@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_a_tool_call_round_trips_with_usage_and_cost(wire: str) -> None:
    server_cls, model = WIRES[wire]
    with server_cls(key=KEY, models=(model,), script=[CALL, Reply(content="Note 3 says hi.")]) as server:
        c = client(wire, server.url)
        first = await c.complete(ASK, tools=TOOLS)
        assert [(t["function"]["name"], json.loads(t["function"]["arguments"])) for t in first.tool_calls] == [
            ("get_note", {"note_id": 3})]
        follow = [*ASK, {"role": "assistant", "content": None, "tool_calls": first.tool_calls},
                  {"role": "tool", "tool_call_id": first.tool_calls[0]["id"], "content": "hi"}]
        second = await c.complete(follow, tools=TOOLS)
    assert second.content == "Note 3 says hi." and not second.tool_calls
    for reply in (first, second):  # the wire's own usage fields, priced from litellm's map
        assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0
        assert reply.usage.cost_usd == pytest.approx(c.prices.cost(reply.usage.prompt_tokens,
                                                                   reply.usage.completion_tokens))
    assert c.prices.source == "litellm" and c.prices.input_per_token > 0
    # What the server received, in its own wire, and the chat view responders read.
    sent = server.requests[1]
    view = sent["_chat"]
    assert [m["role"] for m in view["messages"]] == ["system", "user", "assistant", "tool"]
    assert view["messages"][2]["tool_calls"][0]["function"]["name"] == "get_note"
    assert view["messages"][3]["content"] == "hi" and view["tools"][0]["function"]["name"] == "get_note"
    if wire == "anthropic":
        assert sent["_auth"] == KEY and sent["_version"] and sent["system"]
        blocks = [b["type"] for m in sent["messages"] for b in m["content"]]
        assert "tool_use" in blocks and "tool_result" in blocks and sent["tools"][0]["input_schema"]
    else:
        assert sent["_auth"] == KEY and sent["_model"] == model
        assert view["messages"][3]["tool_call_id"] == view["messages"][2]["tool_calls"][0]["id"]


# (wire, scripted fault, class) as each provider words it; the retryable ones are followed by a success.
FAULTS = [
    ("anthropic", FakeAnthropic.overloaded(), "server"),
    ("anthropic", FakeAnthropic.rate_limited(), "rate_limit"),
    ("anthropic", FakeAnthropic.fault(500, "Internal server error"), "server"),
    ("anthropic", FakeAnthropic.prompt_too_long(), "context"),
    ("anthropic", FakeAnthropic.fault(401, "invalid x-api-key"), "auth"),
    ("anthropic", FakeAnthropic.fault(404, "model: claude-nope"), "not_found"),
    ("anthropic", FakeAnthropic.fault(400, "tools.0.input_schema: Field required"), "bad_request"),
    ("anthropic", Reply(hang=True), "timeout"),
    ("gemini", FakeGemini.resource_exhausted(), "rate_limit"),
    ("gemini", FakeGemini.unavailable(), "server"),
    ("gemini", FakeGemini.internal(), "server"),
    ("gemini", FakeGemini.token_limit(), "context"),
    ("gemini", FakeGemini.bad_key(), "auth"),
    ("gemini", FakeGemini.fault(400, "Invalid JSON payload received. Unknown name \"foo\""), "bad_request"),
    ("gemini", Reply(hang=True), "timeout"),
]
RETRYABLE = {"server", "rate_limit", "timeout"}


@pytest.mark.parametrize(("wire", "fault", "kind"), FAULTS, ids=[f"{w}-{k}" for w, _, k in FAULTS])
async def test_each_provider_error_lands_in_its_class(wire: str, fault: Reply, kind: str) -> None:
    server_cls, model = WIRES[wire]
    with server_cls(key=KEY, models=(model,), script=[fault, Reply(content="fine")], max_lifetime_s=30) as server:
        c = client(wire, server.url, timeout_s=1, retries={"timeout": 1})
        if kind in RETRYABLE:  # retried, then answered
            reply = await c.complete(ASK)
            assert reply.content == "fine" and len(server.requests) == 2
        else:
            with pytest.raises(ModelError) as info:
                await c.complete(ASK)
            assert info.value.kind == kind and len(server.requests) == 1, str(info.value)


@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_a_storm_of_the_wires_own_overloads_is_weathered(wire: str) -> None:
    server_cls, model = WIRES[wire]
    statuses = (529,) if wire == "anthropic" else (503,)
    responder = storm(rate_limited=0.2, server_errors=0.4, statuses=statuses, seed=3)
    with server_cls(key=KEY, models=(model,), responder=responder) as server:
        c = client(wire, server.url, retries={"server": 20, "rate_limit": 20})
        replies = [await c.complete(ASK) for _ in range(6)]
    assert all(r.content == "ok" for r in replies) and len(server.requests) > 6
    bodies = [r for r in server.requests if r["_auth"] == KEY]
    assert len(bodies) == len(server.requests)


def test_errors_carry_the_wires_own_shape_and_a_wrong_key_is_refused() -> None:
    with FakeAnthropic(key=KEY, script=[FakeAnthropic.overloaded()]) as a, FakeGemini(key=KEY) as g:
        busy = httpx.post(f"{a.url}/v1/messages", headers={"x-api-key": KEY, "anthropic-version": "2023-06-01"},
                          json={"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]})
        assert busy.status_code == 529 and busy.json()["error"]["type"] == "overloaded_error"
        assert busy.json()["type"] == "error" and busy.json()["request_id"].startswith("req_")
        wrong = httpx.post(f"{a.url}/v1/messages", headers={"x-api-key": "nope", "anthropic-version": "2023-06-01"},
                           json={"model": "m", "max_tokens": 8, "messages": []})
        assert wrong.status_code == 401 and wrong.json()["error"]["type"] == "authentication_error"
        unversioned = httpx.post(f"{a.url}/v1/messages", headers={"x-api-key": KEY}, json={"messages": []})
        assert unversioned.status_code == 400
        listed = httpx.get(f"{a.url}/v1/models", headers={"x-api-key": KEY})
        assert [m["id"] for m in listed.json()["data"]] == ["fake-model"]
        bad = httpx.post(f"{g.url}/models/gemini-x:generateContent?key=nope", json={"contents": []})
        assert bad.status_code == 400 and bad.json()["error"]["status"] == "INVALID_ARGUMENT"
        ok = httpx.post(f"{g.url}/models/gemini-x:generateContent", headers={"x-goog-api-key": KEY},
                        json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
        assert ok.json()["candidates"][0]["content"]["parts"] == [{"text": "ok"}]
        assert ok.json()["usageMetadata"]["promptTokenCount"] > 0
        other = httpx.post(f"{g.url}/models/gemini-x:countTokens", headers={"x-goog-api-key": KEY}, json={})
        assert other.status_code == 404
        assert httpx.get(f"{g.url}/models", headers={"x-goog-api-key": KEY}).json()["models"][0]["name"] == \
            "models/fake-model"


THINKING = {"max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 1024}}


def _after_call(first: Any, model_state: dict[str, Any] | None) -> list[dict[str, Any]]:
    assistant = {"role": "assistant", "content": None, "tool_calls": first.tool_calls, **(model_state or {})}
    return [*ASK, assistant, {"role": "tool", "tool_call_id": first.tool_calls[0]["id"], "content": "hi"}]


async def test_anthropic_with_thinking_takes_its_signed_block_back_and_refuses_a_turn_without_it() -> None:
    from awm_runtime.testing._anthropic import MISSING_THINKING

    with FakeAnthropic(key=KEY, models=(WIRES["anthropic"][1],), script=[CALL, Reply(content="done")],
                       default=CALL) as server:
        c = client("anthropic", server.url, params=THINKING)
        first = await c.complete(ASK, tools=TOOLS)
        blocks = first.provider_fields["thinking_blocks"]
        assert blocks[0]["type"] == "thinking" and blocks[0]["signature"] and first.reasoning == blocks[0]["thinking"]
        second = await c.complete(_after_call(first, {"thinking_blocks": blocks}), tools=TOOLS)
        assert second.content == "done"
        assert server.requests[1]["messages"][1]["content"][0] == blocks[0]  # first, verbatim
        with pytest.raises(ModelError) as missing:  # the block dropped: Anthropic's 400, never retried
            await c.complete(_after_call(first, None), tools=TOOLS)
        forged = [{**blocks[0], "thinking": blocks[0]["thinking"] + " (edited)"}]
        with pytest.raises(ModelError) as edited:
            await c.complete(_after_call(first, {"thinking_blocks": forged}), tools=TOOLS)
    assert missing.value.kind == "bad_request" and MISSING_THINKING.format(i=1, found="tool_use")[:90] in str(
        missing.value)
    assert edited.value.kind == "bad_request" and "Invalid `signature` in `thinking` block" in str(edited.value)
    assert len(server.refused) == 2


def test_anthropic_thinking_rules_as_the_api_states_them() -> None:
    from awm_runtime.testing._anthropic import Signer, thinking_error

    signer = Signer()
    block = {"type": "thinking", "thinking": "t", "signature": signer.sign("t")}
    redacted = signer.redacted("hidden")
    use = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
    on = {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2048}

    def body(*assistant: dict[str, Any], **params: Any) -> dict[str, Any]:
        return {**params, "messages": [{"role": "user", "content": "go"},
                                       {"role": "assistant", "content": list(assistant)}]}

    assert thinking_error(body(block, use, **on), signer) is None
    assert thinking_error(body(redacted, use, **on), signer) is None
    assert "found `tool_use`" in str(thinking_error(body(use, **on), signer))
    assert thinking_error(body({"type": "text", "text": "hi"}, **on), signer) is None  # no tool_use: no rule
    assert "cannot contain `thinking`" in str(thinking_error(body(block, use, max_tokens=10), signer))
    assert "Invalid `signature`" in str(thinking_error(body({**redacted, "data": "eA==.bad"}, use, **on), signer))
    assert "greater than or equal to 1024" in str(thinking_error(
        body(thinking={"type": "enabled", "budget_tokens": 10}, max_tokens=2048), signer))
    assert "must be greater than `thinking.budget_tokens`" in str(thinking_error(
        body(thinking={"type": "enabled", "budget_tokens": 2048}, max_tokens=2048), signer))


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-pro-preview"])
async def test_a_gemini_thinking_model_needs_each_call_s_thought_signature_back(model: str) -> None:
    with FakeGemini(key=KEY, models=(model,), thinking=True, default=Reply(content="done"),
                    script=[CALL, Reply(content="done")]) as server:
        c = ModelClient(ModelConfig(alias="g", model=f"gemini/{model}", api_base=server.url, api_key_env="WIRE_KEY",
                                    timeout_s=5, backoff_s=0.01), "policy")
        first = await c.complete(ASK, tools=TOOLS)
        assert "__thought__" in first.tool_calls[0]["id"]  # where litellm keeps the signature
        assert first.usage.reasoning_tokens and first.usage.completion_tokens > first.usage.reasoning_tokens
        assert (await c.complete(_after_call(first, None), tools=TOOLS)).content == "done"
        assert server.refused == [] and server.signatures.dummies == 0
        # The signature lost (an id rewritten): Gemini 2.5 is refused, litellm answers for Gemini 3 with Google's
        # documented dummy, which the API accepts and the model then works without its thoughts.
        first.tool_calls[0]["id"] = first.tool_calls[0]["id"].split("__thought__")[0]
        if model.startswith("gemini-3"):
            await c.complete(_after_call(first, None), tools=TOOLS)
            assert server.signatures.dummies == 1
        else:
            with pytest.raises(ModelError) as lost:
                await c.complete(_after_call(first, None), tools=TOOLS)
            assert lost.value.kind == "bad_request" and "missing a thought_signature" in str(lost.value)
