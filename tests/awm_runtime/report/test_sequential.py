"""The --until-decided test: its type-I error by simulation (1,000 runs with no difference decide in at
most alpha of them), its power, its interval, and the pair-by-pair rule the scheduler asks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gammaln

from awm_runtime._interfaces import StoppingRule
from awm_runtime.report import SequentialTest
from awm_runtime.report._sequential import interval, log_e_value

ALPHA = 0.05


def _simulate(runs: int, pairs: int, discordance: float, theta: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised: for each simulated run, whether the e-process ever crossed 1/alpha, and when."""
    rng = np.random.default_rng(seed)
    discordant = rng.random((runs, pairs)) < discordance
    later_wins = discordant & (rng.random((runs, pairs)) < theta)
    n = np.cumsum(discordant, axis=1)
    k = np.cumsum(later_wins, axis=1)
    log_e = gammaln(k + 1) + gammaln(n - k + 1) - gammaln(n + 2) + n * math.log(2)
    crossed = log_e >= math.log(1 / ALPHA)
    return crossed.any(axis=1), np.where(crossed.any(axis=1), crossed.argmax(axis=1) + 1, pairs)


def test_with_no_difference_it_decides_in_at_most_alpha_of_1000_runs() -> None:
    """Peeking after every one of 2,000 pairs, 1,000 times over: Ville's inequality holds."""
    decided, _ = _simulate(1000, 2000, discordance=0.35, theta=0.5, seed=26)
    assert decided.mean() <= ALPHA, decided.mean()
    naive = []  # what peeking at a fixed-n test after every pair would do: far above alpha
    rng = np.random.default_rng(1)
    for _ in range(200):
        wins = np.cumsum(rng.random(300) < 0.5) - np.arange(1, 301) / 2
        naive.append(bool(np.any(np.abs(wins) / np.sqrt(np.arange(1, 301) / 4) > 1.96)))
    assert np.mean(naive) > 2 * ALPHA


def test_with_a_real_difference_it_decides_early() -> None:
    decided, when = _simulate(1000, 400, discordance=0.4, theta=0.8, seed=7)
    assert decided.mean() > 0.95 and np.median(when[decided]) < 100


def test_the_vectorised_e_value_is_the_rules() -> None:
    for n, k in ((0, 0), (5, 5), (10, 3), (200, 130)):
        direct = gammaln(k + 1) + gammaln(n - k + 1) - gammaln(n + 2) + n * math.log(2)
        assert log_e_value(n, k) == pytest.approx(float(direct))
    assert log_e_value(0, 0) == 0.0  # E_0 = 1


def test_the_interval_covers_the_truth_and_shrinks() -> None:
    lo, hi = interval(0, 0, ALPHA)
    assert (lo, hi) == (0.0, 1.0)
    lo, hi = interval(100, 80, ALPHA)
    assert lo < 0.8 < hi and hi - lo < 0.4
    wide = interval(20, 16, ALPHA)
    assert wide[1] - wide[0] > hi - lo
    # the interval excludes 1/2 exactly when the e-value against 1/2 crosses 1/alpha
    for n, k in ((8, 8), (7, 7), (30, 22), (30, 21)):
        lo, hi = interval(n, k, ALPHA)
        assert (not lo <= 0.5 <= hi) == (log_e_value(n, k) >= math.log(1 / ALPHA))


def _rec(arm: str, outcome: str) -> dict[str, str]:
    return {"arm": arm, "outcome": outcome}


def test_the_rule_decides_on_discordant_pairs_and_skips_infra_errors() -> None:
    rule = SequentialTest(alpha=ALPHA)
    assert isinstance(rule, StoppingRule)
    assert rule.pair_finished([_rec("solo", "error"), _rec("asked", "complete")]) is None
    assert rule.pair_finished([_rec("solo", "complete"), _rec("asked", "complete")]) is None
    reasons = [rule.pair_finished([_rec("solo", "incomplete"), _rec("asked", "complete")]) for _ in range(8)]
    assert reasons[:7] == [None] * 7 and reasons[7] is not None and "asked completes more often" in reasons[7]
    state = rule.state()
    assert state["decided"] and state["e_value"] == pytest.approx(2**8 / 9, rel=1e-5)
    assert (state["pairs"], state["pairs_with_infra_error"], state["discordant_pairs"]) == (10, 1, 8)
    assert state["theta_interval"][0] > 0.5 and "asked" in state["interval_note"]
    assert rule.pair_finished([_rec("solo", "incomplete"), _rec("asked", "complete")]) is None  # decided once
