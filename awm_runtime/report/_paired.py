"""Paired A/B statistics between arms: the same task, repeat and seed in both arms.

Arms share episode seeds, so each (scenario, task, repeat) is one matched pair, and the repeats of
one task form a cluster: they are not independent. Pairs where either side hit an infrastructure
error are left out and counted. For each pair of arms (b minus a):

- completion: with one pair per task, the exact McNemar test (a binomial test of the discordant
  pairs, `scipy.stats.binomtest`); with repeats, a sign-flip permutation test over tasks
  (`scipy.stats.permutation_test`: the summed differences of a task keep or flip their sign
  together; exact up to 2^14 patterns, else 20,000 seeded draws, and past 500 tasks with a
  non-zero sum the normal approximation of that same null distribution, whose variance is the sum
  of the squared task sums). On one pair per task the sign-flip test and McNemar's agree.
- reward: the same sign-flip test over tasks, on the reward differences.
- 95% intervals for both differences from a bootstrap that resamples whole tasks
  (`scipy.stats.bootstrap`, percentile method, seeded).
- Holm's step-down correction across the arm pairs of the run, one family per metric.

scipy is imported when a comparison is computed, never by `import awm_runtime`.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

PairKey = tuple[str, int, int]  # (scenario, task_idx, repeat)
BOOTSTRAP_SAMPLES = 2000
PERMUTATIONS = 20_000
NORMAL_FROM = 500  # non-zero clusters: scipy's resampling takes seconds past this, and the CLT is tight
SEED = 20261121
PAIRED_METHOD = (
    "Pairs: the same task, repeat and seed in both arms; pairs with an infrastructure error on either side are "
    "left out. Completion: exact McNemar test when every task has one pair, else a sign-flip permutation test "
    "over tasks (repeats of a task flip together; its normal approximation past 500 tasks). Reward: the same "
    "sign-flip test over tasks. Intervals: "
    "95% bootstrap resampling tasks. p_holm: Holm's correction across the arm pairs of this run, per metric.")


def mcnemar_exact_p(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test of the discordant pairs at p = 1/2."""
    from scipy.stats import binomtest

    n = only_a + only_b
    return 1.0 if n == 0 else float(binomtest(only_b, n, 0.5).pvalue)


def sign_flip(cluster_sums: Sequence[float], *, resamples: int = PERMUTATIONS,
              seed: int = SEED) -> tuple[float, str]:
    """Two-sided p-value of a paired sign-flip permutation test over clusters, and how it was
    computed: `exact`, `monte_carlo` (seeded draws) or `normal` (approximation, many clusters).

    Under no difference between the arms, each cluster's summed (b - a) differences are as likely to
    have the opposite sign; the statistic is their total. Clusters summing to zero do not change the
    null distribution and are dropped, so the test is exact whenever 2^(non-zero clusters) <= resamples."""
    import numpy as np
    from scipy.stats import norm, permutation_test

    sums = np.asarray([s for s in cluster_sums if s != 0.0], dtype=float)
    if sums.size <= 1:
        return 1.0, "exact"  # nothing, or one sum: +s and -s are equally extreme
    if sums.size > NORMAL_FROM:
        # On integer sums the null distribution lives on a lattice of step 2 * gcd: correct for continuity.
        whole = bool(np.all(sums == np.round(sums)))
        half_step = float(np.gcd.reduce(np.abs(sums).astype(np.int64))) if whole else 0.0
        z = max(0.0, abs(float(sums.sum())) - half_step) / float(np.sqrt(np.sum(sums**2)))
        return min(1.0, float(2 * norm.sf(z))), "normal"
    result = permutation_test((sums,), lambda x, axis: np.sum(x, axis=axis), permutation_type="samples",
                              vectorized=True, n_resamples=resamples, alternative="two-sided",
                              rng=np.random.default_rng(seed), batch=max(1, 2_000_000 // sums.size))
    return min(1.0, float(result.pvalue)), "exact" if 2**sums.size <= resamples else "monte_carlo"


def sign_flip_p(cluster_sums: Sequence[float], **kwargs: Any) -> float:
    """The p-value of `sign_flip`."""
    return sign_flip(cluster_sums, **kwargs)[0]


def cluster_bootstrap_ci(clusters: list[tuple[float, int]], *, samples: int = BOOTSTRAP_SAMPLES,
                         seed: int = SEED) -> tuple[float, float] | None:
    """95% interval of a mean difference, resampling clusters given as (sum of differences, pairs)."""
    if len(clusters) < 2:
        return None
    import numpy as np
    from scipy.stats import bootstrap

    sums = np.asarray([s for s, _ in clusters], dtype=float)
    counts = np.asarray([c for _, c in clusters], dtype=float)
    result = bootstrap((sums, counts), lambda s, c, axis: np.sum(s, axis=axis) / np.sum(c, axis=axis),
                       paired=True, vectorized=True, n_resamples=samples, method="percentile",
                       rng=np.random.default_rng(seed), batch=max(1, 2_000_000 // sums.size))
    low, high = result.confidence_interval
    return float(low), float(high)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (None entries, comparisons without a test, are skipped)."""
    ranked = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(ranked):
        running = max(running, min(1.0, (len(ranked) - rank) * p))
        out[i] = running
    return out


def _p(value: float) -> float:
    return float(f"{value:.4g}")


class PairedStats:
    """Collects each arm's outcome and reward per pair key; compares every two arms at the end."""

    def __init__(self) -> None:
        self._cells: dict[PairKey, dict[str, tuple[str, float]]] = {}
        self._arms: list[str] = []

    def add(self, arm: str, scenario: str, task_idx: int, repeat: int, outcome: str, reward: float) -> None:
        if arm not in self._arms:
            self._arms.append(arm)
        self._cells.setdefault((scenario, task_idx, repeat), {})[arm] = (outcome, reward)

    def compare(self, a: str, b: str) -> dict[str, Any]:
        """One comparison, b minus a, with unadjusted p-values (`to_list` adds Holm's)."""
        both = only_a = only_b = neither = infra = 0
        by_task: dict[tuple[str, int], list[tuple[int, float]]] = {}
        for (scenario, task_idx, _), cell in self._cells.items():
            if a not in cell or b not in cell:
                continue
            (out_a, rew_a), (out_b, rew_b) = cell[a], cell[b]
            if "error" in (out_a, out_b):
                infra += 1
                continue
            if "unverified" in (out_a, out_b):  # nothing judged one side: no comparison, and no one's fault
                continue
            win_a, win_b = out_a == "complete", out_b == "complete"
            both += win_a and win_b
            only_a += win_a and not win_b
            only_b += win_b and not win_a
            neither += not (win_a or win_b)
            by_task.setdefault((scenario, task_idx), []).append((int(win_b) - int(win_a), rew_b - rew_a))
        pairs = both + only_a + only_b + neither
        tasks = [by_task[k] for k in sorted(by_task)]  # the order records arrived in must not move a p-value
        completion = [(float(sum(d for d, _ in v)), len(v)) for v in tasks]
        reward = [(sum(r for _, r in v), len(v)) for v in tasks]
        one_pair_each = all(n == 1 for _, n in completion)
        out: dict[str, Any] = {
            "a": a, "b": b, "pairs": pairs, "pairs_with_infra_error": infra, "tasks": len(by_task),
            "max_pairs_per_task": max((n for _, n in completion), default=0),
            "both_complete": both, "only_a_complete": only_a, "only_b_complete": only_b, "neither": neither,
            "completion_a": round((both + only_a) / pairs, 4) if pairs else None,
            "completion_b": round((both + only_b) / pairs, 4) if pairs else None,
            "completion_diff": round((only_b - only_a) / pairs, 4) if pairs else None,
            "completion_test": "mcnemar_exact" if one_pair_each else "sign_flip_over_tasks",
            "completion_p": None, "completion_p_computed": None,
            "reward_diff": round(sum(s for s, _ in reward) / pairs, 4) if pairs else None,
            "reward_test": "sign_flip_over_tasks", "reward_p": None, "reward_p_computed": None,
        }
        if pairs:
            if one_pair_each:
                p, how = mcnemar_exact_p(only_a, only_b), "exact"
            else:
                p, how = sign_flip([s for s, _ in completion])
            out["completion_p"], out["completion_p_computed"] = _p(p), how
            p, how = sign_flip([s for s, _ in reward])
            out["reward_p"], out["reward_p_computed"] = _p(p), how
        ci = cluster_bootstrap_ci(completion)
        out["completion_diff_ci95"] = [round(x, 4) for x in ci] if ci else None
        ci = cluster_bootstrap_ci(reward)
        out["reward_diff_ci95"] = [round(x, 4) for x in ci] if ci else None
        return out

    def to_list(self) -> list[dict[str, Any]]:
        """One comparison per pair of arms, in the order the arms first appeared (b minus a), with
        Holm-adjusted p-values across the comparisons, per metric."""
        comparisons = [self.compare(a, b) for a, b in combinations(self._arms, 2)]
        for metric in ("completion", "reward"):
            adjusted = holm([c[f"{metric}_p"] for c in comparisons])
            for c, p in zip(comparisons, adjusted, strict=True):
                c[f"{metric}_p_holm"] = None if p is None else _p(p)
        return comparisons
