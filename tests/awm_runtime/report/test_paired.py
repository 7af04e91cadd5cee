"""Paired A/B statistics: McNemar's exact test, the cluster bootstrap, and infra errors left out."""

from __future__ import annotations

import math

import pytest

from awm_runtime.report import PairedStats, RunStats, cluster_bootstrap_ci, mcnemar_exact_p


@pytest.mark.parametrize(("b", "c", "p"), [
    (0, 0, 1.0), (5, 5, 1.0),
    (0, 5, 0.0625),            # 2 * 0.5^5
    (1, 9, 0.021484375),       # 2 * (1 + 10) / 1024
    (10, 30, 0.002221),
])
def test_mcnemar_exact_matches_the_binomial(b: int, c: int, p: float) -> None:
    assert mcnemar_exact_p(b, c) == pytest.approx(p, rel=1e-3)
    assert mcnemar_exact_p(b, c) == mcnemar_exact_p(c, b)


def test_mcnemar_is_finite_for_large_discordance() -> None:
    assert 0.0 <= mcnemar_exact_p(900, 1100) < 1e-4 and not math.isnan(mcnemar_exact_p(900, 1100))


def test_bootstrap_interval_contains_the_estimate_and_is_seeded() -> None:
    clusters = [(1.0, 2), (0.0, 2), (2.0, 2), (1.0, 2), (0.0, 2), (1.0, 2)]
    lo, hi = cluster_bootstrap_ci(clusters)  # type: ignore[misc]
    assert lo <= 5 / 12 <= hi and cluster_bootstrap_ci(clusters) == (lo, hi)
    assert cluster_bootstrap_ci([(1.0, 1)]) is None


def test_pairs_match_on_task_and_repeat_and_drop_infra_errors() -> None:
    paired = PairedStats()
    rows = [  # (scenario, task, repeat, solo outcome, expert outcome)
        ("s", 0, 0, "complete", "complete"), ("s", 1, 0, "incomplete", "complete"),
        ("s", 2, 0, "incomplete", "complete"), ("s", 3, 0, "complete", "incomplete"),
        ("s", 4, 0, "format_error", "incomplete"), ("s", 5, 0, "error", "complete"),
    ]
    for scenario, task, repeat, solo, asked in rows:
        paired.add("solo", scenario, task, repeat, solo, 1.0 if solo == "complete" else 0.0)
        paired.add("asked", scenario, task, repeat, asked, 1.0 if asked == "complete" else 0.0)
    paired.add("asked", "s", 9, 0, "complete", 1.0)  # no partner: not a pair
    (c,) = paired.to_list()
    assert (c["a"], c["b"], c["pairs"], c["pairs_with_infra_error"]) == ("solo", "asked", 5, 1)
    assert (c["both_complete"], c["only_a_complete"], c["only_b_complete"], c["neither"]) == (1, 1, 2, 1)
    assert c["completion_a"] == 0.4 and c["completion_b"] == 0.6 and c["completion_diff"] == 0.2
    assert c["reward_diff"] == 0.2 and c["mcnemar_p"] == 1.0
    lo, hi = c["completion_diff_ci95"]
    assert lo <= 0.2 <= hi


def test_run_stats_report_pairs_only_with_two_arms() -> None:
    one, two = RunStats(), RunStats()
    for arm, stats in (("a", one), ("a", two), ("b", two)):
        stats.add({"arm": arm, "scenario": "s", "task_idx": 0, "repeat": 0, "outcome": "complete", "reward": 1.0,
                   "verdict": "complete", "policy": {}, "expert": None, "format_errors": {}, "usage": {}})
    assert "paired" not in one.to_dict()
    assert two.to_dict()["paired"][0]["both_complete"] == 1
