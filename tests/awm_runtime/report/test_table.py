"""The summary table awm-run prints: its solo/recovery/blind row counts successes, as the README says."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from awm_runtime.report import RunStats, summary_table


def record(i: int, outcome: str, ask_style: str, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"arm": "main", "scenario": "s", "task_idx": i, "repeat": 0, "outcome": outcome, "ask_style": ask_style,
            "reward": 1.0 if outcome == "complete" else 0.0, "verdict": outcome, "policy": {}, "expert": None,
            "format_errors": {}, "usage": usage or {}}


def test_the_ask_style_row_counts_successes_only() -> None:
    stats = RunStats()
    rows = [("complete", "solo"), ("complete", "solo"), ("incomplete", "solo"), ("complete", "recovery"),
            ("incomplete", "recovery"), ("incomplete", "blind"), ("error", "blind")]
    for i, (outcome, style) in enumerate(rows):
        stats.add(record(i, outcome, style, {"judge": {"prompt_tokens": 100, "completion_tokens": 7}}))
    arm = stats.to_dict()["arms"]["main"]
    assert arm["ask_styles"] == {"solo": 3, "recovery": 2, "blind": 2}  # every episode, for the record
    assert arm["successes_by_ask_style"] == {"solo": 2, "recovery": 1}
    assert arm["tokens"]["judge_prompt"] == 700 and arm["tokens"]["judge_completion"] == 49
    console = Console(width=200, record=True)
    console.print(summary_table(stats.to_dict()))
    line = next(x for x in console.export_text().splitlines() if "solo/recovery/blind" in x)
    assert "successes solo/recovery/blind" in line and line.split()[-2] == "2/1/0"


def test_an_arm_s_expert_is_the_one_its_episodes_used_and_an_unknown_cost_is_null() -> None:
    """A GRPO arm: expert members carry the expert, solo members none; the arm's expert is the one used."""
    stats = RunStats()
    for i in range(4):
        r = record(i, "complete", "blind" if i < 2 else "solo",
                   {"policy": {"calls": 1, "cost_usd": 0.0, "cost_known": False}})
        stats.add({**r, "expert": {"alias": "sim/oracle", "simulated": True} if i < 2 else None,
                   "expert_calls": 1 if i < 2 else 0})
    arm = stats.to_dict()["arms"]["main"]
    assert arm["expert"]["alias"] == "sim/oracle" and arm["expert_episodes"] == {"sim/oracle": 2}
    assert arm["cost_usd"] is None and arm["economics"]["cost_known"] is False
    console = Console(width=200, record=True)
    console.print(summary_table(stats.to_dict()))
    line = next(x for x in console.export_text().splitlines() if x.startswith("│ expert "))
    assert "sim/oracle (simulated) (2 of 4 episodes)" in line
