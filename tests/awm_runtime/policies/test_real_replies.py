"""The parser on real replies: SmolLM2-135M on llama.cpp's llama-server, recorded (tests/fixtures/llama_cpp)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from awm_runtime import FinalAnswer, Malformed
from awm_runtime.models._tokens import token_fields
from awm_runtime.policies.protocols import parse_reply

FIXTURES = Path(__file__).parents[2] / "fixtures" / "llama_cpp"
TINY_TOOLS = ("list_notes", "get_note", "create_note", "delete_note")


def body(name: str) -> dict:  # type: ignore[type-arg]
    return json.loads((FIXTURES / f"{name}.json").read_text())["body"]


def test_no_reply_cut_at_max_tokens_passes_as_a_final_answer() -> None:
    replies = json.loads((FIXTURES / "smollm2_first_replies.json").read_text())["replies"]
    kinds: Counter[str] = Counter()
    for r in replies:
        parsed = parse_reply(r["protocol"], r["content"], None, TINY_TOOLS, finish_reason=r["finish_reason"])
        action = parsed.action
        kinds[action.kind if isinstance(action, Malformed) else type(action).__name__] += 1
        if r["finish_reason"] == "length":
            assert not isinstance(action, FinalAnswer), r["content"][:80]
    # What the real model did with the first prompt (24 replies): most finish on their own with prose;
    # every cut-off one is a format error of its own kind, or a complete (if invalid) call.
    assert kinds["truncated"] >= 5 and kinds["FinalAnswer"] >= 10
    assert set(kinds) <= {"truncated", "FinalAnswer", "invalid_json", "unclosed_tag", "CallTool", "ListTools"}


def test_a_complete_native_call_cut_afterwards_still_runs() -> None:
    choice = body("chat_native_tool_call")["choices"][0]
    assert choice["finish_reason"] == "length"  # llama.cpp lifted the call; the prose after it was cut
    parsed = parse_reply("native", choice["message"]["content"], choice["message"]["tool_calls"], ("get_weather",),
                         finish_reason=choice["finish_reason"])
    assert parsed.action.call.name == "get_weather" and parsed.action.call.arguments == {"city": "paris"}  # type: ignore[union-attr]


def test_llama_cpp_token_ids_match_the_logprobs_and_the_usage() -> None:
    for name in ("chat_stop_logprobs", "chat_length_logprobs", "chat_native_tool_call"):
        data = body(name)
        fields = token_fields(data["choices"][0])
        assert fields["token_ids"] and fields["logprobs"], name
        assert len(fields["token_ids"]) == len(fields["logprobs"]) == data["usage"]["completion_tokens"], name
    stopped = token_fields(body("chat_stop_logprobs")["choices"][0])
    assert stopped["token_ids"][-1] == 2  # a stop ends with <|im_end|>: sampled, so it is in the ids
