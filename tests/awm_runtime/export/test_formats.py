"""Training exports: sft targets are the policy's own replies only; grpo groups; pairs before/after advice."""

from __future__ import annotations

import json
from typing import Any

import pytest

from awm_runtime.export import ExportStats, action_of, arm_protocols, grpo, pairs, sft

ASK = {"question": "stuck", "context": "404"}
BAD = {"note_id": 999}
GOOD = {"title": "Old"}


def native(name: str, args: dict[str, Any], turn: int) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "source": "policy", "turn": turn,
            "tool_calls": [{"id": f"c{turn}", "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)}}]}


def tagged(protocol: str, name: str, args: dict[str, Any], turn: int) -> dict[str, Any]:
    payload = ({"name": "call_tool", "arguments": {"tool_name": name, "arguments": json.dumps(args)}}
               if protocol == "awm" else {"name": name, "arguments": args})
    return {"role": "assistant", "content": f"<think>hmm</think><tool_call>{json.dumps(payload)}</tool_call>",
            "source": "policy", "turn": turn}


def episode(protocol: str, **fields: Any) -> dict[str, Any]:
    call = (lambda n, a, t: native(n, a, t)) if protocol == "native" else (lambda n, a, t: tagged(protocol, n, a, t))
    messages = [
        {"role": "system", "content": "You operate Tiny Notes.", "source": "system", "turn": 0},
        {"role": "user", "content": "Delete my note titled 'Old'.", "source": "system", "turn": 0},
        call("delete_note", BAD, 1),
        {"role": "user", "content": "Error calling delete_note. Status code: 404.", "source": "world", "turn": 1,
         "tool_error": True},
        {"role": "user", "content": "The last tool call returned an error. If you are stuck, call ask_expert.",
         "source": "nudge", "turn": 1},
        call("ask_expert", ASK, 2),
        {"role": "user", "content": '{"plan": [{"tool": "list_notes"}]}', "source": "expert", "turn": 2},
        call("list_notes", GOOD, 3),
        {"role": "user", "content": '{"notes": [{"id": 1}]}', "source": "world", "turn": 3},
        {"role": "assistant", "content": "<tool_call>{oops", "source": "policy", "turn": 4,
         "format_error": "unclosed_tag"},
        {"role": "user", "content": "Your last reply could not be executed", "source": "system", "turn": 4},
        {"role": "assistant", "content": "Deleted.", "source": "policy", "turn": 5, "token_ids": [1, 2],
         "logprobs": [-0.1, -0.2]},
    ]
    base = {"episode_id": f"e-{protocol}", "arm": "main", "scenario": "tiny_notes", "task_idx": 1, "repeat": 0,
            "task": "Delete my note titled 'Old'.", "outcome": "complete", "verdict": "complete", "reward": 1.3,
            "ask_style": "recovery", "messages": messages,
            "expert_answers": [{"turn": 2, "answered_by": "oracle", "latency_s": 0.01, "fallback": False}]}
    return {**base, **fields}


def test_sft_targets_are_the_policys_own_wellformed_replies() -> None:
    stats = ExportStats()
    rows = [episode("native"), episode("native", outcome="incomplete", episode_id="x")]
    (line,) = list(sft(rows, stats, outcomes={"complete"}))
    targets = [m for m in line["messages"] if m["train"]]
    assert {m["source"] for m in targets} == {"policy"} and len(targets) == 4  # 5 replies, 1 malformed
    assert all(not m["train"] for m in line["messages"] if m["source"] in ("expert", "nudge", "world", "system"))
    assert all("turn" not in m and "token_ids" not in m for m in line["messages"])
    assert stats.records == 2 and stats.lines == 1 and stats.skipped == {"outcome incomplete": 1}


@pytest.mark.parametrize("protocol", ["native", "hermes", "awm"])
def test_pairs_take_the_action_before_the_ask_and_the_one_after_the_advice(protocol: str) -> None:
    stats = ExportStats()
    (pair,) = list(pairs([episode(protocol)], stats, {"main": protocol}))
    assert pair["before"]["action"] == {"kind": "call", "tool": "delete_note", "arguments": BAD}
    assert pair["before"]["result"]["text"].startswith("Error calling delete_note")
    assert pair["before"]["result"]["error"] is True and pair["after"]["result"]["error"] is False
    assert pair["after"]["action"] == {"kind": "call", "tool": "list_notes", "arguments": GOOD}
    assert pair["advice"] == {"text": '{"plan": [{"tool": "list_notes"}]}', "answered_by": "oracle",
                              "fallback": False}
    assert [m["source"] for m in pair["prompt"]] == ["system", "system"]
    assert pair["after"]["message"]["train"] and not pair["before"]["message"]["train"]
    # without the manifest's word the protocol is read off the reply itself
    (guessed,) = list(pairs([episode(protocol)], ExportStats(), {}))
    assert guessed["after"]["action"] == pair["after"]["action"]


def test_advice_before_any_action_makes_no_pair() -> None:
    record = episode("native")
    record["messages"] = record["messages"][:2] + record["messages"][5:]  # the ask is the first action
    stats = ExportStats()
    assert list(pairs([record], stats, {"main": "native"})) == []
    assert stats.skipped == {"advice with no action before or after it": 1}


def test_action_of_reports_format_errors() -> None:
    broken = {"role": "assistant", "content": "<tool_call>{oops", "source": "policy"}
    assert action_of(broken, "hermes")["kind"] == "malformed"
    assert action_of({"content": "All done."}, "native") == {"kind": "final", "text": "All done."}


def member(gid: str, repeat: int, reward: float, adv: float | None, complete: bool = True) -> dict[str, Any]:
    group = {"step": 0, "size": 2, "expert_members": 1, "with_expert": repeat == 0, "phase": "balanced",
             "complete": complete, "retried": None}
    return episode("native", repeat=repeat, reward=reward, advantage=adv, group_id=gid, group=group,
                   reward_components={"table": "try-first"})


def test_grpo_writes_complete_groups_only() -> None:
    rows = [member("g1", 1, 2.0, 1.0), member("g1", 0, 1.3, -1.0),    # complete (written out of order)
            member("g2", 0, 0.0, None, False), member("g2", 1, 2.0, None, False),  # a member failed twice
            member("g3", 0, 2.0, 0.0),                                # torn: its partner never landed
            episode("native")]                                        # not a group run
    stats = ExportStats()
    (line,) = list(grpo(rows, stats))
    assert line["group_id"] == "g1" and line["rewards"] == [1.3, 2.0] and sum(line["advantages"]) == 0
    assert [m["with_expert"] for m in line["members"]] == [True, False]
    last = line["members"][0]["messages"][-1]
    assert last["train"] and last["token_ids"] == [1, 2] and last["logprobs"] == [-0.1, -0.2]
    assert stats.skipped == {"incomplete group (member failed twice)": 2, "partial group": 1, "not in a group": 1}


def test_arm_protocols_come_from_the_runs_aliases() -> None:
    manifest = {"config": {"config_path": None}, "arms": {
        "a": {"policy": {"alias": "sim/novice-awm"}}, "b": {"policy": {"alias": "sim/novice-hermes"}},
        "c": {"policy": {"alias": "my-plugin"}}}}
    assert arm_protocols(manifest) == {"a": "awm", "b": "hermes"}
