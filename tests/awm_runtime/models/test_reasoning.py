"""What a reasoning model's reply keeps for its provider, what goes back to which model, and its reasoning tokens."""

from __future__ import annotations

from typing import Any

import pytest

from awm_runtime._types import Message, Usage
from awm_runtime.models._http import _View
from awm_runtime.models._reasoning import hand_back, provider_fields, reasoning_params, reasoning_tokens, state_for
from awm_runtime.models._reply import ModelReply, to_reply

BLOCK = {"type": "thinking", "thinking": "Check the device first.", "signature": "c2lnbmVk"}


def completion(message: dict[str, Any], usage: dict[str, Any] | None = None) -> _View:
    return _View({"choices": [{"message": message, "finish_reason": "tool_calls"}],
                  "usage": usage or {"prompt_tokens": 10, "completion_tokens": 30}})


def test_anthropic_thinking_blocks_are_kept_verbatim_and_litellm_s_copy_of_them_once() -> None:
    message = {"content": None, "reasoning_content": "Check the device first.", "thinking_blocks": [BLOCK],
               "provider_specific_fields": {"citations": None, "thinking_blocks": [BLOCK], "container": {"id": "c"}}}
    reply = to_reply(completion(message, {"prompt_tokens": 10, "completion_tokens": 30,
                                          "completion_tokens_details": {"reasoning_tokens": 6}}), 0.1)
    assert reply.provider_fields == {"thinking_blocks": [BLOCK], "provider_specific_fields": {"container": {"id": "c"}}}
    assert reply.reasoning == "Check the device first."
    assert reply.usage.reasoning_tokens is None  # litellm's figure for Anthropic is its own estimate: not reported
    assert ModelReply.from_wire(reply.to_wire()) == reply  # crosses a model-call process unchanged


def test_a_vllm_reasoning_field_is_kept_under_its_own_name_and_its_tokens_counted() -> None:
    for name in ("reasoning_content", "reasoning"):
        reply = to_reply(completion({"content": "ok", name: "thought"}, {
            "prompt_tokens": 10, "completion_tokens": 30, "completion_tokens_details": {"reasoning_tokens": 12}}), 0.1)
        assert reply.provider_fields == {name: "thought"} and reply.reasoning == "thought"
        assert reply.usage.reasoning_tokens == 12


@pytest.mark.parametrize("details", [None, {}, {"reasoning_tokens": None}, {"reasoning_tokens": -1},
                                     {"reasoning_tokens": True}])
def test_reasoning_tokens_are_none_unless_reported(details: dict[str, Any] | None) -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "completion_tokens_details": details}
    assert reasoning_tokens(_View(usage), None) is None
    assert reasoning_tokens(None, None) is None


def test_a_plain_reply_has_no_provider_fields_and_a_reported_zero_stays_zero() -> None:
    reply = to_reply(completion({"content": "ok"}, {"prompt_tokens": 1, "completion_tokens": 2,
                                                    "completion_tokens_details": {"reasoning_tokens": 0}}), 0.1)
    assert reply.provider_fields is None and reply.usage.reasoning_tokens == 0


def test_hand_back_gives_reasoning_text_only_to_a_declared_vllm_server() -> None:
    fields = {"reasoning_content": "t", "thinking_blocks": [BLOCK]}
    assert hand_back("hosted_vllm/qwen3", fields) == fields
    assert hand_back("openai/deepseek-reasoner", fields) == {"thinking_blocks": [BLOCK]}
    assert hand_back("openai/x", {"reasoning_content": "t"}) is None and hand_back("openai/x", None) is None
    assert state_for("openai/x", {"reasoning_content": "t"}) is None
    assert state_for("anthropic/c", fields) == {"model": "anthropic/c", "fields": {"thinking_blocks": [BLOCK]}}


def test_a_message_hands_its_state_back_to_the_model_that_made_it_only() -> None:
    m = Message(role="assistant", content=None, source="policy", provider_state=state_for("anthropic/c", {
        "thinking_blocks": [BLOCK], "provider_specific_fields": {"thought_signatures": ["s"]}}))
    assert m.to_openai("anthropic/c") == {"role": "assistant", "content": None, "thinking_blocks": [BLOCK],
                                          "provider_specific_fields": {"thought_signatures": ["s"]}}
    # Another model (a fork or an arm on another provider), or no model named: OpenAI's fields only.
    assert m.to_openai("gemini/g") == m.to_openai() == {"role": "assistant", "content": None}
    # Records, checkpoints and Ray carry it as JSON: it comes back whole.
    assert Message.model_validate_json(m.model_dump_json()) == m


def test_a_role_s_reasoning_total_is_known_only_while_every_call_reported_it() -> None:
    total = Usage()
    total.add(Usage(calls=1, completion_tokens=10, reasoning_tokens=4))
    total.add(Usage(calls=1, completion_tokens=10, reasoning_tokens=3))
    assert total.reasoning_tokens == 7
    total.add(Usage())  # no call: changes nothing
    assert total.reasoning_tokens == 7
    total.add(Usage(calls=1, completion_tokens=10))
    assert total.reasoning_tokens is None
    total.add(Usage(calls=1, completion_tokens=10, reasoning_tokens=3))
    assert total.reasoning_tokens is None and total.completion_tokens == 40


def test_reasoning_params_are_the_switches_that_turn_reasoning_on() -> None:
    assert reasoning_params({"max_tokens": 5}) == {}
    assert reasoning_params({"thinking": {"type": "disabled"}}) == {}
    assert reasoning_params({"reasoning_effort": "none"}) == {}
    assert reasoning_params({"reasoning_effort": "high", "thinking": {"type": "enabled", "budget_tokens": 1024}}) == {
        "reasoning_effort": "high", "thinking": {"type": "enabled", "budget_tokens": 1024}}


def test_provider_fields_reads_pydantic_objects_as_plain_json() -> None:
    from pydantic import BaseModel

    class Block(BaseModel):
        type: str
        thinking: str
        signature: str

    class Msg:
        def __init__(self) -> None:
            self.thinking_blocks = [Block(**BLOCK)]
            self.provider_specific_fields = {"thought_signatures": ("a", "b")}

    assert provider_fields(Msg()) == {"thinking_blocks": [BLOCK], "provider_specific_fields": {
        "thought_signatures": ["a", "b"]}}


def test_a_reasoning_request_without_the_state_of_the_call_it_answers_is_missing_state(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from awm_runtime.models._reasoning import modify_params_on, state_missing

    call = [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    on = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    own = state_for("anthropic/c", {"thinking_blocks": [BLOCK]})
    user = Message(role="user", content="go", source="system")
    theirs = Message(role="assistant", content=None, source="policy", tool_calls=call)
    ours = Message(role="assistant", content=None, source="policy", tool_calls=call, provider_state=own)
    answer = Message(role="assistant", content="done", source="policy")
    assert state_missing([user, theirs], "anthropic/c", on)
    assert not state_missing([user, theirs], "anthropic/c", {})  # reasoning not asked for
    assert not state_missing([user, ours], "anthropic/c", on)
    assert state_missing([user, ours], "anthropic/other", on)  # another model's blocks are no use
    assert not state_missing([user], "anthropic/c", on) and not state_missing([user, answer], "anthropic/c", on)
    monkeypatch.setenv("LITELLM_MODIFY_PARAMS", "True")
    assert modify_params_on()
    monkeypatch.setenv("LITELLM_MODIFY_PARAMS", "false")
    assert modify_params_on() is (getattr(__import__("sys").modules.get("litellm"), "modify_params", False) is True)


def test_a_reply_out_of_max_tokens_without_an_answer_is_named_with_its_fix() -> None:
    from awm_runtime.models._reasoning import exhausted

    empty = ModelReply(content="", finish_reason="length", usage=Usage(calls=1, reasoning_tokens=64))
    assert exhausted(empty, "judge", "thinker", {"max_tokens": 64}) == (
        "judge model 'thinker' used its whole max_tokens (64), 64 of them reasoning and returned no answer: "
        "raise max_tokens under [models.thinker] in awm.toml")
    assert "provider default" in str(exhausted(ModelReply(content=None, finish_reason="length"), "expert", "x", {}))
    assert exhausted(ModelReply(content="part", finish_reason="length"), "judge", "x", {}) is None  # an answer, cut
    assert exhausted(ModelReply(content="", finish_reason="stop"), "judge", "x", {}) is None
    assert exhausted(ModelReply(content=None, finish_reason="length", tool_calls=[{"id": "c"}]), "judge", "x", {}) \
        is None
