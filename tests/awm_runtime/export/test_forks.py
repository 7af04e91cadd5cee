"""fork-pairs and ask-labels from a fork run's records: which states make rows, and what is a target."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from awm_runtime.export import ExportStats, ask_labels, fork_pairs, records
from tests.awm_runtime.export.conftest import ADVICE, native, result, source, write_run

PREFIX = [
    {"role": "system", "content": "You operate Tiny Notes.", "source": "system", "turn": 0},
    {"role": "user", "content": "Delete my note titled 'Old'.", "source": "system", "turn": 0},
    native("delete_note", {"note_id": 999}, 1),
    result("native", "Error calling delete_note. Status code: 404.", 1, tool_error=True),
]


def branch(episode_id: str, state: str, mode: str, outcome: str, *, malformed: bool = False,
           reward: float | None = None) -> dict[str, Any]:
    rest: list[dict[str, Any]] = []
    if mode == "ask":
        rest.append({"role": "user", "content": f"An expert suggests this plan:\n{ADVICE}", "source": "expert",
                     "turn": 2})
    reply = native("list_notes" if outcome == "complete" else "delete_note", {}, 2)
    if malformed:
        reply = {"role": "assistant", "content": "<tool_call>{oops", "source": "policy", "turn": 2,
                 "format_error": "unclosed_tag"}
    rest += [reply, result("native", '{"notes": []}', 2),
             {"role": "assistant", "content": "Done.", "source": "policy", "turn": 3}]
    return {"episode_id": episode_id, "run_id": "f", "arm": mode, "scenario": "tiny_notes", "task_idx": 1,
            "repeat": 0, "outcome": outcome, "verdict": outcome, "tools_id": "sha256:tiny",
            "reward": reward if reward is not None else (1.0 if outcome == "complete" else 0.1),
            "policy": {"alias": "p", "model": "m", "protocol": "native"},
            "expert": {"alias": "oracle", "model": "oracle"} if mode == "ask" else None,
            "messages": [*PREFIX, *rest],
            "fork": {"run": "src", "episode_id": state, "turn": 1, "mode": mode, "preceding": "tool_error",
                     "prefix_messages": len(PREFIX)}}


def again(run: Path) -> Any:
    def rows() -> Iterator[dict[str, Any]]:
        return records(run)
    return rows


def test_fork_pairs_take_the_best_and_worst_branch_where_outcomes_differ(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [
        branch("a1", "S", "ask", "complete"), branch("s1", "S", "solo", "incomplete"),
        branch("s2", "S", "solo", "incomplete", reward=0.0),
        branch("a2", "T", "ask", "complete"), branch("s3", "T", "solo", "complete"),  # alike: no pair
        branch("a3", "U", "ask", "complete", malformed=True), branch("s4", "U", "solo", "incomplete"),
        branch("x", "V", "solo", "error"),
    ])
    stats = ExportStats()
    rows = list(fork_pairs(again(run), stats, source()))
    assert len(rows) == 1 and stats.lines == 1
    (row,) = rows
    assert row["chosen_arm"] == "ask" and row["rejected_arm"] == "solo" and row["rejected_reward"] == 0.0
    assert [m["role"] for m in row["prompt"]] == ["system", "user", "assistant", "tool"]
    assert row["chosen"] == [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "list_notes", "arguments": "{}"}}]}]
    assert stats.skipped["a forked state whose continuations all ended alike"] == 1
    assert stats.skipped["a branch whose first policy reply is malformed"] == 1
    whole = list(fork_pairs(again(run), ExportStats(), source(), "whole"))
    assert len(whole) == 1
    for side in ("chosen", "rejected"):
        assert all(ADVICE not in (m["content"] or "") for m in whole[0][side])  # advice is never a target
    assert [m["role"] for m in whole[0]["chosen"]] == ["assistant", "tool", "assistant"]


def test_ask_labels_one_row_per_state_with_both_arms(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [
        branch("a1", "S", "ask", "complete"), branch("s1", "S", "solo", "incomplete"),
        branch("a2", "T", "ask", "incomplete"), branch("s2", "T", "solo", "complete"),
        branch("a3", "W", "ask", "complete"),  # no solo continuation: no label
    ])
    stats = ExportStats()
    rows = {r["fork_episode_id"]: r for r in ask_labels(again(run), stats, source())}
    assert set(rows) == {"S", "T"}
    assert rows["S"]["value_of_asking"] == 1.0 and rows["S"]["label"] == "ask"
    assert rows["T"]["value_of_asking"] == -1.0 and rows["T"]["label"] == "solo"
    assert rows["S"]["messages"][-1]["role"] == "tool" and len(rows["S"]["messages"]) == len(PREFIX)
    assert rows["S"]["expert"] == "oracle" and rows["S"]["preceding"] == "tool_error"
    assert stats.skipped["a forked state without both an ask and a solo continuation"] == 1
