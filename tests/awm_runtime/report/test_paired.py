"""Paired A/B statistics: exact McNemar, the task-clustered sign-flip test, Holm, the cluster bootstrap,
and infra errors left out. Known values are computed by hand (or with R, as noted)."""

from __future__ import annotations

import math

import pytest

from awm_runtime.report import PairedStats, RunStats, cluster_bootstrap_ci, holm, mcnemar_exact_p, sign_flip_p


@pytest.mark.parametrize(("b", "c", "p"), [
    (0, 0, 1.0), (5, 5, 1.0),
    (0, 5, 0.0625),            # 2 * 0.5^5
    (1, 9, 0.021484375),       # 2 * (1 + 10) / 1024
    (10, 30, 0.002221),
    (2, 10, 0.03857421875),    # 2 * (1 + 12 + 66) / 4096; R: binom.test(2, 12)$p.value
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
    assert (c["matched_pairs"], c["pairs_missing_in_a"], c["pairs_missing_in_b"]) == (6, 1, 0)
    assert (c["both_complete"], c["only_a_complete"], c["only_b_complete"], c["neither"]) == (1, 1, 2, 1)
    assert c["completion_a"] == 0.4 and c["completion_b"] == 0.6 and c["completion_diff"] == 0.2
    assert c["reward_diff"] == 0.2 and c["completion_test"] == "McNemar exact" and c["completion_p"] == 1.0
    assert c["completion_p_holm"] == 1.0 and c["reward_test"] == "sign-flip over tasks"
    # strict: the infra-error pair counts, as a failure of solo and a completion of asked: 6 pairs, 1 / 3
    assert (c["strict_pairs"], c["strict_only_a_complete"], c["strict_only_b_complete"]) == (6, 1, 3)
    assert c["strict_completion_diff"] == round(2 / 6, 4) and c["strict_completion_test"] == "McNemar exact"
    lo, hi = c["completion_diff_ci95"]
    assert lo <= 0.2 <= hi


def test_run_stats_report_pairs_only_with_two_arms() -> None:
    one, two = RunStats(), RunStats()
    for arm, stats in (("a", one), ("a", two), ("b", two)):
        stats.add({"arm": arm, "scenario": "s", "task_idx": 0, "repeat": 0, "outcome": "complete", "reward": 1.0,
                   "verdict": "complete", "policy": {}, "expert": None, "format_errors": {}, "usage": {}})
    assert "paired" not in one.to_dict()
    assert two.to_dict()["paired"][0]["both_complete"] == 1


def test_sign_flip_is_exact_on_a_hand_computed_case() -> None:
    # Non-zero task sums 2, 1, -1, 3 (the 0 changes nothing): of the 16 sign patterns, |sum| >= 5 for
    # (+,+,+,+) = 7, (+,-,+,+) = 5, (+,+,-,+) = 5 and their mirrors: 6 / 16.
    assert sign_flip_p([2.0, 1.0, 0.0, -1.0, 3.0]) == pytest.approx(0.375)
    assert sign_flip_p([0.0, 0.0]) == 1.0 and sign_flip_p([]) == 1.0
    assert sign_flip_p([1.0] * 5) == pytest.approx(2 / 32)  # all five agree: 2 of 32 patterns


def test_sign_flip_over_singletons_is_mcnemar() -> None:
    assert sign_flip_p([1.0] * 10 + [-1.0] * 2 + [0.0] * 5) == pytest.approx(mcnemar_exact_p(2, 10))


@pytest.mark.parametrize(("ps", "adjusted"), [
    ([0.01, 0.04, 0.03], [0.03, 0.06, 0.06]),          # R: p.adjust(c(0.01, 0.04, 0.03), "holm")
    ([0.01, 0.02, 0.03, 0.5], [0.04, 0.06, 0.06, 0.5]),  # R: p.adjust(c(.01, .02, .03, .5), "holm")
    ([0.3, None, 0.6], [0.6, None, 0.6]),
    ([0.9], [0.9]),
])
def test_holm_matches_r(ps: list, adjusted: list) -> None:
    got = holm(ps)
    assert [None if g is None else pytest.approx(g) for g in got] == adjusted


def test_repeats_are_clustered_by_task() -> None:
    """Eight repeats of three tasks: arm b wins all 8 repeats of one task and nothing else. Counted as 8
    independent pairs, McNemar says p = 0.008; over tasks, one task's sum is all the evidence there is, and
    flipping its sign is as extreme as not: p = 1."""
    paired = PairedStats()
    for task in range(3):
        for repeat in range(8):
            paired.add("a", "s", task, repeat, "incomplete", 0.1)
            paired.add("b", "s", task, repeat, "complete" if task == 0 else "incomplete", 1.0 if task == 0 else 0.1)
    (c,) = paired.to_list()
    assert (c["pairs"], c["tasks"], c["max_pairs_per_task"]) == (24, 3, 8)
    assert c["completion_test"] == "sign-flip over tasks" and c["completion_p"] == 1.0
    assert mcnemar_exact_p(0, 8) == pytest.approx(0.0078125)  # what the pairs-as-independent test would claim
    assert c["reward_p"] == 1.0 and c["completion_diff"] == round(8 / 24, 4)


def test_holm_runs_across_the_arm_pairs() -> None:
    paired = PairedStats()
    for task in range(12):  # b beats a on 10 tasks, c ties a: two comparisons share one family
        for arm, win in (("a", task >= 10), ("b", task < 10 or task >= 10), ("c", task >= 10)):
            paired.add(arm, "s", task, 0, "complete" if win else "incomplete", 1.0 if win else 0.0)
    by_pair = {(c["a"], c["b"]): c for c in paired.to_list()}
    ab, ac, bc = by_pair["a", "b"], by_pair["a", "c"], by_pair["b", "c"]
    # a->b and b->c: 10 discordant pairs all one way, p = 2 * 0.5^10 each; a->c: none, p = 1. Holm over the
    # three: 3p, then max(3p, 2p) = 3p for the tie, then 1.
    assert ab["completion_p"] == bc["completion_p"] == pytest.approx(0.001953, rel=1e-3)
    assert ab["completion_p_holm"] == bc["completion_p_holm"] == pytest.approx(3 * 0.001953, rel=1e-3)
    assert ac["completion_p"] == ac["completion_p_holm"] == 1.0


def test_the_method_is_stated_in_the_summary() -> None:
    stats = RunStats()
    for arm in ("a", "b"):
        stats.add({"arm": arm, "scenario": "s", "task_idx": 0, "repeat": 0, "outcome": "complete", "reward": 1.0,
                   "verdict": "complete", "policy": {}, "expert": None, "format_errors": {}, "usage": {}})
    summary = stats.to_dict()
    assert "McNemar" in summary["paired_method"] and "Holm" in summary["paired_method"]


def test_many_tasks_are_exact_on_the_lattice_and_agree_with_monte_carlo() -> None:
    """522 task sums on the integer lattice: exact by convolution (the old code used a normal
    approximation here); 100,000 seeded sign-flip draws agree within their resolution."""
    from awm_runtime.report._exact import _monte_carlo, sign_flip

    sums = [1.0, -1.0, 2.0, -2.0, 1.0, -1.0] * 87
    sums[:50] = [abs(s) for s in sums[:50]]
    exact = sign_flip(sums)
    mc = _monte_carlo(sums, draws=100_000, seed=1, test="t")
    assert exact.how == "exact" and mc.how == "monte_carlo" and mc.draws == 100_000
    assert 0.03 < exact.value < 0.06 and exact.value == pytest.approx(mc.value, abs=0.004)


def test_the_order_records_arrive_in_does_not_move_the_figures() -> None:
    rows = [(task, repeat, arm, (task + repeat + (arm == "b")) % 3 == 0) for task in range(9) for repeat in range(2)
            for arm in ("a", "b")]
    forward, backward = PairedStats(), PairedStats()
    for stats, ordered in ((forward, rows), (backward, rows[::-1])):
        for task, repeat, arm, win in sorted(ordered, key=lambda r: r[2]) if stats is backward else ordered:
            stats.add(arm, "s", task, repeat, "complete" if win else "incomplete", float(win))
    assert forward.to_list() == backward.to_list()


def _record(arm: str, task: int, outcome: str, *, seed: int = 0, repeat: int = 0, reward: float | None = None,
            **extra: object) -> dict:
    return {"arm": arm, "scenario": "s", "task_idx": task, "repeat": repeat, "seed": seed, "outcome": outcome,
            "reward": (1.0 if outcome == "complete" else 0.0) if reward is None else reward, "verdict": outcome,
            "policy": {"alias": "p"}, "expert": None, "format_errors": {}, "usage": {}, **extra}


def test_pairs_need_the_same_seed_and_different_seeds_are_compared_unpaired() -> None:
    stats = RunStats()
    for task in range(12):
        stats.add(_record("run1/a", task, "complete" if task < 3 else "incomplete", seed=1))
        stats.add(_record("run2/b", task, "complete" if task < 9 else "incomplete", seed=2))
    (c,) = stats.to_dict()["paired"]
    assert c["design"] == "unpaired" and "different --seed" in c["design_note"] and c["pairs"] == 0
    assert (c["pairs_missing_in_a"], c["pairs_missing_in_b"]) == (12, 12)
    assert c["completion_test"] == "Fisher exact (unpaired)" and c["completion_diff"] == 0.5
    from scipy.stats import fisher_exact

    assert c["completion_p"] == pytest.approx(fisher_exact([[3, 9], [9, 3]]).pvalue)
    assert c["reward_p_computed"] == "monte_carlo" and "Monte Carlo, n = " in c["reward_p_text"]


def test_missing_pairs_and_duplicates_are_counted_and_named() -> None:
    stats = RunStats()
    for task in range(5):
        stats.add(_record("a", task, "complete"))
    for task in range(1, 6):
        stats.add(_record("b", task, "complete"))
    stats.add(_record("b", 2, "incomplete"))  # a duplicate key: the first record stands, the second is named
    summary = stats.to_dict()
    (c,) = summary["paired"]
    assert (c["pairs"], c["pairs_missing_in_a"], c["pairs_missing_in_b"]) == (4, 1, 1)
    assert (c["duplicates_a"], c["duplicates_b"]) == (0, 1) and c["both_complete"] == 4
    assert summary["paired_duplicates"] == "1 duplicate episode key(s) (arm:scenario/task repeat seed): b:s/2 " \
                                           "repeat 0 seed 0"


def test_zero_of_zero_is_none_everywhere() -> None:
    stats = RunStats()
    stats.add(_record("a", 0, "error"))
    stats.add(_record("b", 0, "error"))
    summary = stats.to_dict()
    arm = summary["arms"]["a"]
    assert arm["accountable_episodes"] == 0
    assert arm["completion_rate"] is None and arm["mean_reward"] is None and arm["mean_turns"] is None
    assert arm["strict_completion_rate"] == 0.0  # 0 of 1: a rate, not 0 of 0
    (c,) = summary["paired"]
    assert c["pairs"] == 0 and c["completion_diff"] is None and c["completion_p"] is None
    assert c["completion_p_text"] == "n/a" and c["strict_pairs"] == 1
    from rich.console import Console

    from awm_runtime.report import paired_table, summary_table

    console = Console(width=200, record=True)
    console.print(summary_table(summary))
    console.print(paired_table(summary))
    text = console.export_text()
    assert "n/a (0 of 0)" in text and "0.0%" not in text.split("strict completion")[0]


def test_arm_order_is_the_run_s_not_the_records() -> None:
    """Records of the later arm arrive first: Δ is still later − earlier, as --arm gave them."""
    ordered, arrival = RunStats(["solo", "asked"]), RunStats()
    for stats in (ordered, arrival):
        for task in range(6):
            stats.add(_record("asked", task, "complete"))
            stats.add(_record("solo", task, "incomplete"))
    (c,) = ordered.to_dict()["paired"]
    assert (c["a"], c["b"], c["completion_diff"]) == ("solo", "asked", 1.0)
    assert list(ordered.to_dict()["arms"]) == ["solo", "asked"]
    (d,) = arrival.to_dict()["paired"]
    assert (d["a"], d["b"], d["completion_diff"]) == ("asked", "solo", -1.0)


def test_strict_and_accountable_disagree_when_infra_errors_depend_on_the_arm() -> None:
    stats = RunStats(["a", "b"])
    for task in range(14):  # b completes 10 where a does not, but b's 12 other tasks end in infra errors
        stats.add(_record("a", task, "complete" if task >= 10 else "incomplete"))
        stats.add(_record("b", task, "complete" if task < 10 else "error"))
    for task in range(14, 26):
        stats.add(_record("a", task, "complete"))
        stats.add(_record("b", task, "error"))
    (c,) = stats.to_dict()["paired"]
    assert c["completion_diff"] > 0 and c["completion_p"] < 0.05
    assert c["strict_completion_diff"] < 0 and c["strict_disagrees"] is True


@pytest.mark.parametrize("seed", range(20))
def test_no_p_is_ever_zero(seed: int) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    stats = RunStats(["a", "b"])
    tasks, repeats = int(rng.integers(1, 400)), int(rng.integers(1, 4))
    for task in range(tasks):
        for repeat in range(repeats):
            stats.add(_record("a", task, "incomplete", repeat=repeat, reward=0.1))
            stats.add(_record("b", task, "complete", repeat=repeat, reward=float(rng.choice([1.0, 2.0, 1.3]))))
    (c,) = stats.to_dict()["paired"]
    for key in ("completion_p", "strict_completion_p", "reward_p", "completion_p_holm", "reward_p_holm"):
        assert c[key] > 0, (key, c[key])
    assert c["completion_p_log10"] <= 0 and c["completion_p_text"] not in ("0", "0.0")


def test_groups_compare_only_arms_of_different_runs() -> None:
    stats = PairedStats(["r1/a", "r1/b", "r2/a"], groups={"r1/a": "r1", "r1/b": "r1", "r2/a": "r2"})
    for arm in ("r1/a", "r1/b", "r2/a"):
        for task in range(3):
            stats.add(arm, "s", task, 0, "complete" if arm == "r2/a" else "incomplete", 1.0)
    assert [(c["a"], c["b"]) for c in stats.to_list()] == [("r1/a", "r2/a"), ("r1/b", "r2/a")]
