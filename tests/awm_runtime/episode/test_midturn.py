"""The mid-turn checkpoint's file: a reply saved and read back is the reply that arrived; only the turn it
belongs to uses it; a write is all or nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from awm_runtime._interfaces import Action, Advice, CallTool, FinalAnswer, ListTools, Malformed, PolicyTurn
from awm_runtime._types import Message, ToolCall, Usage
from awm_runtime.episode._midturn import (
    REPLY,
    SavedReply,
    advice_of,
    load_saved_reply,
    policy_turn_of,
    saved_advice,
    saved_policy_turn,
    write_durably,
)

ACTIONS: list[Action] = [
    CallTool(ToolCall(id="c1", name="create_label", arguments={"repository_id": 1, "name": "bug"})),
    ListTools(),
    FinalAnswer("done: label 7"),
    Malformed("invalid_json", "Expecting ',' at 12"),
]


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: type(a).__name__)
def test_a_policy_turn_survives_the_file(action: Action) -> None:
    message = Message(role="assistant", content="<tool_call>...</tool_call>", source="policy", turn=3,
                      tool_calls=[{"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}])
    pt = PolicyTurn(message=message, action=action, warnings=("multiple_calls",),
                    usage=Usage(calls=1, prompt_tokens=120, completion_tokens=30, cost_usd=0.0012,
                                latency_s=[0.8]), elapsed_s=0.81)
    back = policy_turn_of(SavedReply.model_validate_json(SavedReply(
        episode_id="e", after_turn=2, policy=saved_policy_turn(pt)).model_dump_json()).policy)
    assert back == pt


def test_an_expert_answer_survives_the_file() -> None:
    advice = Advice(text="Call list_repositories first.", answered_by="llm:gpt", usage=Usage(calls=1, cost_usd=0.01),
                    latency_s=1.5, fallback=True)
    assert advice_of(saved_advice(advice)) == advice


def test_only_the_turn_after_its_checkpoint_uses_a_saved_reply(tmp_path: Path) -> None:
    pt = PolicyTurn(message=Message(role="assistant", content="hi", source="policy"), action=FinalAnswer("hi"))
    reply = SavedReply(episode_id="ep1", after_turn=4, policy=saved_policy_turn(pt))
    assert load_saved_reply(tmp_path, "ep1", 4) is None  # nothing saved
    write_durably(tmp_path / REPLY, reply.model_dump_json().encode())
    assert load_saved_reply(tmp_path, "ep1", 4) == reply
    assert load_saved_reply(tmp_path, "ep1", 3) is None  # tied to another checkpoint
    assert load_saved_reply(tmp_path, "ep2", 4) is None  # another episode's
    (tmp_path / REPLY).write_bytes(b'{"episode_id": "ep1", "after_')  # cut short (not by write_durably)
    assert load_saved_reply(tmp_path, "ep1", 4) is None


def test_a_durable_write_replaces_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / REPLY
    assert write_durably(path, b"first") == 5
    assert write_durably(path, b"second one") == 10
    assert path.read_bytes() == b"second one"
    assert [p.name for p in tmp_path.iterdir()] == [REPLY]  # no temporary file left
