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


def test_errors_that_censor_one_mode_make_the_value_of_asking_no_finding() -> None:
    """The expert times out on the states ask would lose: the accountable view sees a gain that is not there
    (the true ask and solo rates are equal); the strict view and the error balance say so."""
    stats = ForkStats()
    for task in range(12):
        for i in range(4):  # solo: 2 of 4 complete; ask: 2 of 4, its 2 failures are infrastructure errors
            stats.add(record(f"S{task}", 1, "solo", "complete" if i < 2 else "incomplete", task=task))
            stats.add(record(f"S{task}", 1, "ask", "complete" if i < 2 else "error", task=task))
    out = stats.to_dict()
    assert out is not None
    assert out["overall"]["delta_complete"] == 0.5 and out["overall"]["delta_complete_strict"] == 0.0
    balance = out["infra_errors_by_mode"]
    assert (balance["ask"], balance["ask_continuations"], balance["solo"], balance["solo_continuations"]) == (
        24, 48, 0, 48)
    assert balance["mode_dependent"] and balance["fisher_p"] < 1e-6
    assert out["caveat"].startswith("infrastructure errors depend on the mode (ask 24 of 48, solo 0 of 48")
    console = Console(record=True, width=200)
    console.print(forks_table({"value_of_asking": out}))
    text = console.export_text()
    assert "Not a finding: infrastructure errors depend on the mode" in text


def test_errors_alike_in_both_modes_leave_no_caveat_and_the_views_agree() -> None:
    stats = ForkStats()
    for task in range(12):
        for mode, outcomes in (("ask", ["complete"] * 3 + ["error"]), ("solo", ["incomplete"] * 3 + ["error"])):
            for o in outcomes:
                stats.add(record(f"S{task}", 1, mode, o, task=task))
    out = stats.to_dict()
    assert out is not None and out["caveat"] is None and not out["infra_errors_by_mode"]["mode_dependent"]
    assert out["overall"]["delta_complete"] == 1.0 and out["overall"]["delta_complete_strict"] == 0.75


def test_views_that_disagree_are_no_finding() -> None:
    """Errors not unbalanced enough to be beyond chance (ask 8 of 12, solo 4 of 12) but the accountable gain
    (+0.5 in every state) is none in the strict view (1/3 against 1/3)."""
    stats = ForkStats()
    for task in range(4):
        for mode, outcomes in (("ask", ["complete", "error", "error"]), ("solo", ["complete", "error", "incomplete"])):
            for o in outcomes:
                stats.add(record(f"S{task}", 1, mode, o, task=task))
    out = stats.to_dict()
    assert out is not None and not out["infra_errors_by_mode"]["mode_dependent"]
    assert out["overall"]["delta_complete"] == 0.5 and out["overall"]["delta_complete_strict"] == 0.0
    assert out["caveat"] == ("the accountable ΔP(complete) [0.5, 0.5] and the strict one (infrastructure errors "
                             "as failures) [0.0, 0.0] disagree: not a finding")
