"""Paired A/B statistics between arms: the same task, repeat AND seed in both arms.

Each (scenario, task, repeat, seed) is one matched pair, and the repeats of one task form a cluster:
they are not independent. For each two arms, in the order the run's `--arm` flags gave them (b is
the later arm, every difference is b minus a):

- **accountable**: pairs where neither side hit an infrastructure error. Completion: exact McNemar
  (one pair per task) or an exact sign-flip test over tasks (`_exact.py`); reward: the sign-flip test.
- **strict**: every pair, an infrastructure error counted as a failure. The comparison is flagged
  when the two views disagree (on the direction, or on significance at 0.05).
- **pairing you can see**: pairs used, pairs missing in either arm, and duplicate keys (an error
  for `awm-report`). Arms with no key in common (runs with different seeds) are compared
  unpaired: Fisher's exact test and a permutation test of mean reward, labelled so.
- 95% intervals by a bootstrap that resamples whole tasks; Holm's correction across the arm pairs,
  per metric, on the exact log10 p-values.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

from awm_runtime.report._exact import PValue, fisher, holm, holm_log10, mcnemar, permutation_unpaired, sign_flip

PairKey = tuple[str, int, int, int]  # (scenario, task_idx, repeat, seed)
BOOTSTRAP_SAMPLES = 2000
SEED = 20261121
ALPHA = 0.05
PAIRED_METHOD = (
    "Pairs: the same scenario, task, repeat and seed in both arms (b is the later --arm, differences are b - a). "
    "Accountable: pairs with an infrastructure error on either side are left out; strict: they count as "
    "failures. Completion: exact McNemar when every task has one pair, else an exact sign-flip test over tasks "
    "(repeats of a task flip together; lattice convolution, Monte Carlo only past its size, marked). Reward: the "
    "same sign-flip test. Arms sharing no seed are compared unpaired (Fisher exact; permutation of means). "
    "Intervals: 95% bootstrap resampling tasks. Holm: across the arm pairs of the run, per metric.")

__all__ = ["PAIRED_METHOD", "PairedStats", "cluster_bootstrap_ci", "holm", "mcnemar_exact_p", "sign_flip_p"]


def mcnemar_exact_p(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value (never 0: computed in log space)."""
    return mcnemar(only_a, only_b).value


def sign_flip_p(cluster_sums: Sequence[float], **kwargs: Any) -> float:
    """The p-value of the sign-flip test over clusters (`_exact.sign_flip`)."""
    return sign_flip(cluster_sums, **kwargs).value


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


def _rate(k: int, n: int) -> float | None:
    return round(k / n, 4) if n else None


def _round_ci(ci: tuple[float, float] | None) -> list[float] | None:
    return [round(x, 4) for x in ci] if ci else None


def _paired_block(cells: list[tuple[tuple[str, int], str, float, str, float]], *, strict: bool) -> dict[str, Any]:
    """Completion (and, accountable only, reward) statistics over matched pairs."""
    both = only_a = only_b = neither = 0
    by_task: dict[tuple[str, int], list[tuple[int, float]]] = {}
    for task, out_a, rew_a, out_b, rew_b in cells:
        win_a, win_b = out_a == "complete", out_b == "complete"
        both += win_a and win_b
        only_a += win_a and not win_b
        only_b += win_b and not win_a
        neither += not (win_a or win_b)
        by_task.setdefault(task, []).append((int(win_b) - int(win_a), rew_b - rew_a))
    pairs = both + only_a + only_b + neither
    tasks = [by_task[k] for k in sorted(by_task)]  # the order records arrived in must not move a p-value
    completion = [(float(sum(d for d, _ in v)), len(v)) for v in tasks]
    one_pair_each = all(n == 1 for _, n in completion)
    prefix = "strict_completion" if strict else "completion"
    out: dict[str, Any] = {
        f"{prefix}_a": _rate(both + only_a, pairs), f"{prefix}_b": _rate(both + only_b, pairs),
        f"{prefix}_diff": _rate(only_b - only_a, pairs),
        f"{prefix}_diff_ci95": _round_ci(cluster_bootstrap_ci(completion)),
    }
    if strict:
        out.update({"strict_pairs": pairs, "strict_only_a_complete": only_a, "strict_only_b_complete": only_b})
    else:
        out.update({"pairs": pairs, "tasks": len(by_task), "max_pairs_per_task": max((n for _, n in completion),
                                                                                     default=0),
                    "both_complete": both, "only_a_complete": only_a, "only_b_complete": only_b,
                    "neither": neither})
    if pairs:
        p = mcnemar(only_a, only_b) if one_pair_each else sign_flip([s for s, _ in completion])
        out.update(p.fields(prefix))
    else:
        out.update({f"{prefix}_p": None, f"{prefix}_p_text": "n/a", f"{prefix}_test": "none (no pairs)"})
    if not strict:
        reward = [(sum(r for _, r in v), len(v)) for v in tasks]
        out["reward_diff"] = round(sum(s for s, _ in reward) / pairs, 4) if pairs else None
        out["reward_diff_ci95"] = _round_ci(cluster_bootstrap_ci(reward))
        if pairs:
            out.update(sign_flip([s for s, _ in reward]).fields("reward"))
        else:
            out.update({"reward_p": None, "reward_p_text": "n/a", "reward_test": "none (no pairs)"})
    return out


def _disagree(c: dict[str, Any]) -> bool:
    """Whether the strict and accountable views tell a different story: direction or significance."""
    d_acc, d_str = c.get("completion_diff"), c.get("strict_completion_diff")
    p_acc, p_str = c.get("completion_p"), c.get("strict_completion_p")
    if d_acc is None or d_str is None or p_acc is None or p_str is None:
        return False
    opposite = d_acc * d_str < 0
    return bool(opposite or (p_acc < ALPHA) != (p_str < ALPHA))


class PairedStats:
    """Collects each arm's outcome and reward per pair key; compares every two arms at the end.

    `order` is the arms' order as the run defined them (its `--arm` flags); arms it does not name
    follow in the order they first appeared. `groups` (arm -> run) compares only arms of different
    groups: runs against runs, a run's own arms being compared within it."""

    def __init__(self, order: Sequence[str] = (), groups: dict[str, str] | None = None) -> None:
        self._cells: dict[PairKey, dict[str, tuple[str, float]]] = {}
        self._groups = groups
        self._arms: list[str] = list(order)
        self._present: set[str] = set()
        self.duplicates: list[tuple[str, PairKey]] = []

    def add(self, arm: str, scenario: str, task_idx: int, repeat: int, outcome: str, reward: float,
            seed: int = 0) -> None:
        if arm not in self._arms:
            self._arms.append(arm)
        self._present.add(arm)
        cell = self._cells.setdefault((scenario, task_idx, repeat, seed), {})
        if arm in cell:  # the first record stands; the duplicate is reported, never silently counted twice
            self.duplicates.append((arm, (scenario, task_idx, repeat, seed)))
            return
        cell[arm] = (outcome, reward)

    @property
    def arms(self) -> list[str]:
        return [a for a in self._arms if a in self._present]

    def put_before(self, first: str, second: str) -> None:
        """Make `first` the earlier arm of `second` (so differences are second − first)."""
        if first in self._arms and second in self._arms and self._arms.index(first) > self._arms.index(second):
            self._arms.remove(first)
            self._arms.insert(self._arms.index(second), first)

    def duplicate_text(self, limit: int = 5) -> str:
        """The duplicate keys, named, for an error message."""
        shown = ", ".join(f"{arm}:{s}/{t} repeat {r} seed {sd}" for arm, (s, t, r, sd) in self.duplicates[:limit])
        more = f" and {len(self.duplicates) - limit} more" if len(self.duplicates) > limit else ""
        return f"{len(self.duplicates)} duplicate episode key(s) (arm:scenario/task repeat seed): {shown}{more}"

    def compare(self, a: str, b: str) -> dict[str, Any]:
        """One comparison, b minus a, with unadjusted p-values (`to_list` adds Holm's)."""
        matched: list[tuple[tuple[str, int], str, float, str, float]] = []
        missing_a = missing_b = infra = 0
        for (scenario, task_idx, _, _), cell in self._cells.items():
            if a not in cell or b not in cell:
                missing_a += b in cell
                missing_b += a in cell
                continue
            (out_a, rew_a), (out_b, rew_b) = cell[a], cell[b]
            if "unverified" in (out_a, out_b):  # nothing judged one side: no comparison, and no one's fault
                continue
            matched.append(((scenario, task_idx), out_a, rew_a, out_b, rew_b))
            infra += "error" in (out_a, out_b)
        dup = {arm: sum(1 for x, _ in self.duplicates if x == arm) for arm in (a, b)}
        out: dict[str, Any] = {"a": a, "b": b, "design": "paired", "matched_pairs": len(matched),
                               "pairs_missing_in_a": missing_a, "pairs_missing_in_b": missing_b,
                               "duplicates_a": dup[a], "duplicates_b": dup[b], "pairs_with_infra_error": infra}
        if not matched and missing_a and missing_b:
            return {**out, **self._unpaired(a, b)}
        accountable = [m for m in matched if "error" not in (m[1], m[3])]
        out.update(_paired_block(accountable, strict=False))
        out.update(_paired_block(matched, strict=True))
        out["strict_disagrees"] = _disagree(out)
        return out

    def _unpaired(self, a: str, b: str) -> dict[str, Any]:
        """Arms with no pair key in common (different seeds): two independent samples, labelled so."""
        res: dict[str, list[tuple[str, float]]] = {a: [], b: []}
        for cell in self._cells.values():
            for arm in (a, b):
                if arm in cell and cell[arm][0] != "unverified":  # nothing judged it: in neither view
                    res[arm].append(cell[arm])
        acc = {arm: [(o, r) for o, r in v if o != "error"] for arm, v in res.items()}
        k = {arm: sum(o == "complete" for o, _ in v) for arm, v in acc.items()}
        n = {arm: len(v) for arm, v in acc.items()}
        ks = {arm: sum(o == "complete" for o, _ in v) for arm, v in res.items()}
        ns = {arm: len(v) for arm, v in res.items()}
        rate_a, rate_b = _rate(k[a], n[a]), _rate(k[b], n[b])
        srate_a, srate_b = _rate(ks[a], ns[a]), _rate(ks[b], ns[b])
        out: dict[str, Any] = {
            "design": "unpaired", "design_note": "unpaired: the arms share no (task, repeat, seed), e.g. runs "
            "with different --seed", "pairs": 0, "tasks": None, "episodes_a": n[a], "episodes_b": n[b],
            "completion_a": rate_a, "completion_b": rate_b,
            "completion_diff": None if rate_a is None or rate_b is None else round(rate_b - rate_a, 4),
            "completion_diff_ci95": None, "only_a_complete": None, "only_b_complete": None,
            "strict_completion_a": srate_a, "strict_completion_b": srate_b,
            "strict_completion_diff": None if srate_a is None or srate_b is None else round(srate_b - srate_a, 4),
            "strict_completion_diff_ci95": None,
            "reward_diff": round(sum(r for _, r in acc[b]) / n[b] - sum(r for _, r in acc[a]) / n[a], 4)
            if n[a] and n[b] else None, "reward_diff_ci95": None,
        }
        out.update(fisher(k[a], n[a], k[b], n[b]).fields("completion"))
        out.update(fisher(ks[a], ns[a], ks[b], ns[b]).fields("strict_completion"))
        out.update(permutation_unpaired([r for _, r in acc[a]], [r for _, r in acc[b]]).fields("reward"))
        out["strict_disagrees"] = _disagree(out)
        return out

    def to_list(self) -> list[dict[str, Any]]:
        """One comparison per two arms, in the run's arm order (b minus a), with Holm-adjusted p-values
        across the comparisons, per metric (`*_p_holm`; `*_p_holm_text` prints it)."""
        groups = self._groups
        comparisons = [self.compare(a, b) for a, b in combinations(self.arms, 2)
                       if groups is None or groups.get(a) != groups.get(b)]
        for metric in ("completion", "strict_completion", "reward"):
            adjusted = holm_log10([c.get(f"{metric}_p_log10") for c in comparisons])
            for c, p in zip(comparisons, adjusted, strict=True):
                c[f"{metric}_p_holm"] = None if p is None else PValue(p, "exact", "").value
                if p is not None:
                    mc = c.get(f"{metric}_p_computed") == "monte_carlo"
                    text = PValue(p, "exact", "").text()
                    c[f"{metric}_p_holm_text"] = f"≤ {text} (from a Monte Carlo p)" if mc else text
        return comparisons


def paired_summary(stats: PairedStats) -> dict[str, Any]:
    """The summary.json fields of the paired comparisons (with duplicates, when there were any)."""
    out: dict[str, Any] = {"paired": stats.to_list(), "paired_method": PAIRED_METHOD}
    if stats.duplicates:
        out["paired_duplicates"] = stats.duplicate_text(limit=20)
    return out

