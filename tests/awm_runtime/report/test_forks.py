"""The value of asking per forked state, its task-clustered intervals and breakdowns, and checkpoint costs."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from awm_runtime.report import RunStats, forks_table
from awm_runtime.report._forks import CheckpointStats, ForkStats, aggregate


def record(state: str, turn: int, mode: str, outcome: str, *, task: int = 0, scenario: str = "s",
           preceding: str = "tool_error", reward: float | None = None, expert: str = "oracle") -> dict[str, Any]:
    return {"arm": mode, "scenario": scenario, "task_idx": task, "repeat": 0, "outcome": outcome,
            "reward": reward if reward is not None else (1.0 if outcome == "complete" else 0.1),
            "expert": {"alias": expert} if mode == "ask" else None,
            "fork": {"episode_id": state, "turn": turn, "mode": mode, "preceding": preceding}}


def test_per_state_differences_and_breakdowns() -> None:
    stats = ForkStats()
    # state A (task 0, after a tool error): ask 2/2, solo 0/2 -> +1; state B (task 1, nothing): ask 1/2, solo 1/2 -> 0
    for mode, outcomes in (("ask", ["complete", "complete"]), ("solo", ["incomplete", "incomplete"])):
        for o in outcomes:
            stats.add(record("A", 2, mode, o))
    for mode, outcomes in (("ask", ["complete", "incomplete"]), ("solo", ["complete", "incomplete"])):
        for o in outcomes:
            stats.add(record("B", 0, mode, o, task=1, preceding="nothing"))
    stats.add(record("B", 0, "solo", "error", task=1))  # infrastructure: left out, counted
    stats.add({"arm": "x", "outcome": "complete", "fork": {"mode": "continue", "episode_id": "C", "turn": 1}})
    out = stats.to_dict()
    assert out is not None and out["states"] == 2 and out["infra_errors"] == 1
    overall = out["overall"]
    assert overall["delta_complete"] == 0.5 and overall["p_complete_ask"] == 0.75 and overall["p_complete_solo"] == 0.25
    assert overall["delta_reward"] == round((0.9 + 0.0) / 2, 4)
    low, high = overall["delta_complete_ci"]
    assert 0 <= low <= 0.5 <= high <= 1  # two tasks: resampled as clusters
    assert out["by_preceding"]["tool_error"]["delta_complete"] == 1.0
    assert out["by_preceding"]["nothing"]["delta_complete"] == 0.0
    assert out["by_preceding"]["nothing"]["delta_complete_ci"] is None  # one task: no interval
    assert list(out["by_turn"]) == ["0", "2"] and set(out["by_expert"]) == {"oracle"}


def test_a_state_without_both_arms_has_no_difference() -> None:
    stats = ForkStats()
    stats.add(record("A", 1, "ask", "complete"))
    out = stats.to_dict()
    assert out is not None and out["states"] == 0 and out["overall"] == {"states": 0}
    assert ForkStats().to_dict() is None
    assert aggregate([]) == {"states": 0}


def test_run_stats_carry_the_value_of_asking_and_the_table_renders() -> None:
    stats = RunStats()
    for task in range(3):
        stats.add({**record(f"S{task}", 1, "ask", "complete", task=task), "policy": {}, "verdict": "complete"})
        stats.add({**record(f"S{task}", 1, "solo", "incomplete", task=task), "policy": {}, "verdict": "others"})
    summary = stats.to_dict()
    assert summary["value_of_asking"]["overall"]["delta_complete"] == 1.0
    assert summary["value_of_asking"]["overall"]["delta_complete_ci"] == [1.0, 1.0]
    console = Console(record=True, width=160)
    table = forks_table(summary)
    assert table is not None
    console.print(table)
    text = console.export_text()
    assert "Value of asking" in text and "after tool_error" in text and "after 1 turns" in text
    assert forks_table({"arms": {}}) is None


def test_checkpoint_costs() -> None:
    stats = CheckpointStats()
    assert stats.to_dict() is None
    stats.add({"turns": 4, "checkpoints": {"mode": "every", "count": 4, "captures": 4, "bytes": 4000, "seconds": 0.02,
                                           "replies": 5, "reply_bytes": 2500, "reply_seconds": 0.01}})
    stats.add({"turns": 6, "checkpoints": {"mode": "every", "count": 6, "bytes": 6000, "seconds": 0.03}})
    stats.add({"turns": 3})
    out = stats.to_dict()
    assert out == {"mode": "every", "episodes": 2, "checkpoints": 10, "bytes": 10000, "seconds": 0.05,
                   "captures": 10, "ms_per_capture": 5.0, "ms_per_checkpoint": 5.0, "bytes_per_checkpoint": 1000,
                   "bytes_per_turn": 1000, "replies": 5, "reply_seconds": 0.01, "ms_per_reply": 2.0,
                   "reply_bytes_per_turn": 250, "ms_per_turn": 6.0}
