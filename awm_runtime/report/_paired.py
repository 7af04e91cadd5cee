"""Paired A/B statistics between arms: the same task, repeat and seed in both arms.

Arms share episode seeds, so each (scenario, task, repeat) is one matched pair. Completion is
compared with an exact McNemar test on the discordant pairs, and the differences in completion
and mean reward get 95% bootstrap intervals that resample whole tasks (repeats of one task are
not independent). Pairs where either side hit an infrastructure error are left out and counted.
"""

from __future__ import annotations

import math
import random
from itertools import combinations
from typing import Any

PairKey = tuple[str, int, int]  # (scenario, task_idx, repeat)
BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20261121


def mcnemar_exact_p(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test of the discordant pairs at p = 1/2."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    log_half_n = n * math.log(0.5)
    tail = sum(math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + log_half_n)
               for i in range(k + 1))
    return min(1.0, 2.0 * tail)


def _percentile(sorted_values: list[float], q: float) -> float:
    idx = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[idx]


def cluster_bootstrap_ci(clusters: list[tuple[float, int]], *, samples: int = BOOTSTRAP_SAMPLES,
                         seed: int = BOOTSTRAP_SEED) -> tuple[float, float] | None:
    """95% interval of a mean difference, resampling clusters given as (sum of differences, pairs)."""
    if len(clusters) < 2:
        return None
    rng = random.Random(seed)
    n = len(clusters)
    means = []
    for _ in range(samples):
        total = count = 0.0
        for _ in range(n):
            s, c = clusters[rng.randrange(n)]
            total += s
            count += c
        means.append(total / count)
    means.sort()
    return _percentile(means, 0.025), _percentile(means, 0.975)


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
        both = only_a = only_b = neither = infra = 0
        by_task: dict[tuple[str, int], list[tuple[int, float]]] = {}
        for (scenario, task_idx, _), cell in self._cells.items():
            if a not in cell or b not in cell:
                continue
            (out_a, rew_a), (out_b, rew_b) = cell[a], cell[b]
            if "error" in (out_a, out_b):
                infra += 1
                continue
            win_a, win_b = out_a == "complete", out_b == "complete"
            both += win_a and win_b
            only_a += win_a and not win_b
            only_b += win_b and not win_a
            neither += not (win_a or win_b)
            by_task.setdefault((scenario, task_idx), []).append((int(win_b) - int(win_a), rew_b - rew_a))
        pairs = both + only_a + only_b + neither
        out: dict[str, Any] = {
            "a": a, "b": b, "pairs": pairs, "pairs_with_infra_error": infra, "tasks": len(by_task),
            "both_complete": both, "only_a_complete": only_a, "only_b_complete": only_b, "neither": neither,
            "completion_a": round((both + only_a) / pairs, 4) if pairs else None,
            "completion_b": round((both + only_b) / pairs, 4) if pairs else None,
            "completion_diff": round((only_b - only_a) / pairs, 4) if pairs else None,
            "mcnemar_p": float(f"{mcnemar_exact_p(only_a, only_b):.4g}"),
        }
        completion = [(float(sum(d for d, _ in v)), len(v)) for v in by_task.values()]
        reward = [(sum(r for _, r in v), len(v)) for v in by_task.values()]
        ci = cluster_bootstrap_ci(completion)
        out["completion_diff_ci95"] = [round(x, 4) for x in ci] if ci else None
        out["reward_diff"] = round(sum(s for s, _ in reward) / pairs, 4) if pairs else None
        ci = cluster_bootstrap_ci(reward)
        out["reward_diff_ci95"] = [round(x, 4) for x in ci] if ci else None
        return out

    def to_list(self) -> list[dict[str, Any]]:
        """One comparison per pair of arms, in the order the arms first appeared (b minus a)."""
        return [self.compare(a, b) for a, b in combinations(self._arms, 2)]
