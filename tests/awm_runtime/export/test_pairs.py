"""pairs: TRL preference rows where the chosen action followed the advice and did better."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest

from awm_runtime.export import ExportStats, action_of, followed, pairs
from tests.awm_runtime.export.conftest import ADVICE, BAD, GOOD, NUDGE, episode, source


@pytest.mark.parametrize("protocol", ["native", "hermes", "awm"])
def test_one_preference_row_per_intervention_that_helped(tmp_path: Path, protocol: str) -> None:
    stats = ExportStats()
    rows = list(pairs([episode(protocol)], stats, source()))
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (row,) = datasets.load_dataset("json", data_files=str(tmp_path / "p.jsonl"), split="train")
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]  # the context before the failed action
    (chosen,), (rejected,) = row["chosen"], row["rejected"]
    assert chosen["role"] == rejected["role"] == "assistant"
    record = episode(protocol)
    assert action_of({**chosen, "tool_calls": chosen.get("tool_calls")}, protocol) == \
        {"kind": "call", "tool": "list_notes", "arguments": GOOD}
    assert action_of({**rejected, "tool_calls": rejected.get("tool_calls")}, protocol)["arguments"] == BAD
    policy = [m.get("content") or "" for m in record["messages"] if m["source"] == "policy"]
    assert chosen["content"] in policy and rejected["content"] in policy  # the policy's own replies
    for m in (*row["prompt"], chosen, rejected):  # the advice and the nudge are in no row
        assert ADVICE not in m["content"] and NUDGE not in m["content"]
    assert row["answered_by"] == "oracle" and row["rejected_result"].startswith(
        "Error calling delete_note" if protocol == "native" else "Tool response:\nError calling")


def test_no_pair_when_the_advice_was_not_followed_or_did_not_help() -> None:
    ignored = episode("native")
    ignored["messages"][7]["tool_calls"][0]["function"]["name"] = "delete_note"  # not what the plan says
    worse = episode("native")
    worse["messages"][8]["tool_error"] = True
    fine_before = episode("native")
    fine_before["messages"][3]["tool_error"] = False
    first_ask = episode("native")
    first_ask["messages"] = first_ask["messages"][:2] + first_ask["messages"][5:]  # the ask is the first action
    stats = ExportStats()
    assert list(pairs([ignored, worse, fine_before, first_ask], stats, source())) == []
    assert stats.skipped == {"the action after the advice did not follow it": 1,
                             "the advised action did no better": 1,
                             "the action before the advice did not fail": 1,
                             "advice with no action before or after it": 1}


def test_followed_reads_plans_and_free_text() -> None:
    call = {"kind": "call", "tool": "list_notes", "arguments": {}}
    assert followed(call, ADVICE) and not followed({**call, "tool": "delete_note"}, ADVICE)
    assert followed(call, "Try list_notes first, then delete by id.")
    assert not followed({"kind": "final", "text": "done"}, ADVICE)
