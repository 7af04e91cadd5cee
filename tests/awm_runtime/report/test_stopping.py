"""A run stopped under --until-decided: its sequential result leads and no fixed-sample p-value is left."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from awm_runtime.report import RunStats, SequentialTest, paired_table
from awm_runtime.report._stopping import (
    NOT_VALID,
    anytime_p,
    apply_stopping,
    completion_diff_interval,
    sequential_text,
)


def record(arm: str, task: int, outcome: str) -> dict[str, Any]:
    return {"arm": arm, "scenario": "s", "task_idx": task, "repeat": 0, "seed": 3, "outcome": outcome,
            "reward": 1.0 if outcome == "complete" else 0.0, "verdict": outcome, "policy": {}, "expert": None,
            "format_errors": {}, "usage": {}}


def stopped_run() -> tuple[dict[str, Any], dict[str, Any]]:
    """12 pairs: 9 won by b only, 3 where both complete; the rule decides on the discordant ones."""
    stats, rule = RunStats(["a", "b"]), SequentialTest(alpha=0.05)
    for task in range(12):
        a, b = record("a", task, "incomplete" if task < 9 else "complete"), record("b", task, "complete")
        stats.add(a)
        stats.add(b)
        rule.pair_finished([a, b])
    seq = {"stop_reason": "decided: b completes more often", **rule.state()}
    return stats.to_dict(), seq


def numeric_p_fields(c: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in c.items() if k.endswith(("_p", "_p_holm", "_p_log10", "_p_min", "_p_draws"))
            and isinstance(v, int | float)}


def test_anytime_p_and_the_completion_difference_the_confidence_sequence_implies() -> None:
    assert anytime_p({"e_value": 40.0}) == 0.025 and anytime_p({"e_value": 0.5}) == 1.0
    assert anytime_p({}) is None
    seq = {"pairs": 22, "pairs_with_infra_error": 2, "discordant_pairs": 10, "theta_interval": [0.6, 0.9]}
    assert completion_diff_interval(seq) == [0.1, 0.4]  # share 10/20 of the pairs: 0.5 * (2 theta - 1)
    assert completion_diff_interval({"pairs": 0, "theta_interval": [0, 1]}) is None


def test_every_fixed_sample_p_goes_and_the_sequential_result_leads() -> None:
    stats, seq = stopped_run()
    assert numeric_p_fields(stats["paired"][0])  # before: McNemar, sign-flip, Holm
    apply_stopping(stats, seq)
    c = stats["paired"][0]
    assert numeric_p_fields(c) == {}
    assert c["completion_p_text"] == NOT_VALID and c["reward_p_holm_text"] == NOT_VALID
    assert c["completion_diff"] == 0.75  # the difference stays: descriptive
    s = stats["sequential"]
    assert s["e_value"] == 51.2 and s["p_anytime"] == 0.01953  # 2^9 / 10 for 9 of 9; 1/E to 4 digits
    assert s["discordant_pairs"] == 9 and s["pairs"] == 12
    text = sequential_text(s, c)
    assert text.startswith("until-decided: decided (b completes more often). Sequential result, valid after")
    assert f"anytime-valid p = min(1, 1/E) = {s['p_anytime']:.3g}" in text
    assert "The decision used 9 discordant pairs of the 12 it saw" in text and "the table counts 12 pairs" in text
    assert NOT_VALID in text
    console = Console(record=True, width=250)
    console.print(paired_table(stats))
    shown = console.export_text()
    assert NOT_VALID in shown and "Δ = b − a" in shown and "9 discordant pairs of the 12" in shown


def test_a_run_without_a_sequential_block_keeps_its_p_values() -> None:
    stats, _ = stopped_run()
    apply_stopping(stats, None)
    assert "sequential" not in stats and numeric_p_fields(stats["paired"][0])
