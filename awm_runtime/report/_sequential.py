"""The sequential A/B test of `awm-run --until-decided`: a mixture SPRT (an e-process) on paired discordance.

Of two arms' episodes on the same task, repeat and seed, only a *discordant* pair (one arm completes,
the other does not) says which arm is better. With no difference between the arms, each discordant
pair is won by the later arm with probability 1/2, whatever came before. The test's e-value is the
likelihood ratio of the discordant wins, mixed over a uniform prior on the win probability theta,
against theta = 1/2 (Robbins' mixture martingale):

    E_n = B(k + 1, n - k + 1) / B(1, 1) * 2^n      (n discordant pairs, k won by the later arm)

E_n is a nonnegative martingale with E_0 = 1 under the null, so by Ville's inequality
P(E_n >= 1/alpha for some n) <= alpha: the test may be looked at after every pair and stop the first
time it crosses 1/alpha, and its error rate stays at most alpha. The anytime-valid interval for theta
is the set of values the same mixture does not reject at 1/alpha, a confidence sequence (Howard,
Ramdas, McAuliffe and Sekhon, Ann. Statist. 2021; Ramdas, Grünwald, Vovk and Shafer, Statist. Sci.
2023).

Infrastructure errors (docs/runs.md, "Decisions under infrastructure failure"). The test keeps two views
of the same pairs: the *accountable* one leaves out pairs with an infrastructure error on either side,
the *strict* one counts an error as a failure of its arm. Dropping errors is only sound when they strike
the arms alike: an arm whose infrastructure fails on the episodes it would have lost looks better to the
accountable view with the same true rate. So the test stops with a winner only when both views cross
1/alpha for the same arm, and a third e-process of the same form watches the pairs where exactly one
side errored: once it crosses 1/alpha (errors depend on the arm beyond chance) the test refuses to
decide, and says so. Each e-process keeps Ville's bound on its own, so a decision needs a false crossing
of both views and a refusal is itself anytime-valid.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

GRID = 4001  # theta values the interval is read from


def log_e_value(n: int, k: int) -> float:
    """The natural log of the mixture e-value after n discordant pairs, k won by the later arm."""
    return math.lgamma(k + 1) + math.lgamma(n - k + 1) - math.lgamma(n + 2) + n * math.log(2)


def interval(n: int, k: int, alpha: float) -> tuple[float, float]:
    """The anytime-valid (1 - alpha) interval of theta: where the mixture against theta stays below 1/alpha."""
    import numpy as np
    from scipy.special import xlog1py, xlogy

    if n == 0:
        return 0.0, 1.0
    theta = np.linspace(0.0, 1.0, GRID)
    with np.errstate(divide="ignore"):
        log_lik = xlogy(k, theta) + xlog1py(n - k, -theta)  # 0 * log 0 = 0
    log_mix = math.lgamma(k + 1) + math.lgamma(n - k + 1) - math.lgamma(n + 2)
    inside = theta[log_mix - log_lik < math.log(1 / alpha)]
    return float(inside.min()), float(inside.max())


def _crossed(n: int, k: int, alpha: float) -> bool:
    return log_e_value(n, k) >= math.log(1 / alpha)


def _e(n: int, k: int) -> float:
    return float(f"{math.exp(min(700.0, log_e_value(n, k))):.6g}")


@dataclass(slots=True)
class SequentialTest:
    """The `StoppingRule` of `--until-decided`: asked after each finished pair, it says when to stop."""

    alpha: float = 0.05
    pairs: int = 0
    infra: int = 0
    discordant: int = 0  # accountable view: pairs without an infrastructure error
    later_wins: int = 0
    strict_discordant: int = 0  # strict view: an infrastructure error is a failure of its arm
    strict_later_wins: int = 0
    errors_earlier: int = 0  # pairs where the earlier arm hit an infrastructure error
    errors_later: int = 0
    error_discordant: int = 0  # pairs where exactly one arm hit an infrastructure error
    later_only_errors: int = 0  # ... and it was the later arm
    decided: bool = False
    refused: bool = False
    arms: tuple[str, str] | None = None

    def pair_finished(self, pair: Sequence[dict[str, Any]]) -> str | None:
        """One pair (the earlier arm's record first); a stop reason once the test decides (or refuses to),
        else None."""
        a, b = pair[0], pair[-1]
        self.arms = self.arms or (str(a.get("arm")), str(b.get("arm")))
        self.pairs += 1
        err_a, err_b = a.get("outcome") == "error", b.get("outcome") == "error"
        win_a, win_b = a.get("outcome") == "complete", b.get("outcome") == "complete"
        self.errors_earlier += err_a
        self.errors_later += err_b
        self.error_discordant += err_a != err_b
        self.later_only_errors += err_b and not err_a
        if win_a != win_b:  # an error is not "complete": the strict view counts it as a failure
            self.strict_discordant += 1
            self.strict_later_wins += win_b
        if err_a or err_b:
            self.infra += 1
        elif win_a != win_b:
            self.discordant += 1
            self.later_wins += win_b
        if self.decided or self.refused:
            return None
        if _crossed(self.error_discordant, self.later_only_errors, self.alpha):
            self.refused = True
            return self.refusal()
        accountable = _crossed(self.discordant, self.later_wins, self.alpha)
        strict = _crossed(self.strict_discordant, self.strict_later_wins, self.alpha)
        if accountable and strict and self._favoured(self.discordant, self.later_wins) == self._favoured(
                self.strict_discordant, self.strict_later_wins):
            self.decided = True
            better = self._favoured(self.discordant, self.later_wins)
            return (f"decided: {better} completes more often (e-value {self.e_value:.3g} >= 1/alpha, "
                    f"strict view {self.strict_e_value:.3g})")
        return None

    def _favoured(self, n: int, k: int) -> str:
        assert self.arms is not None
        return self.arms[1] if 2 * k > n else self.arms[0]

    def note(self) -> str | None:
        """Why the test has not decided though one view would have: the views disagree (None otherwise)."""
        if self.decided or self.refused or self.arms is None:
            return None
        acc = _crossed(self.discordant, self.later_wins, self.alpha)
        strict = _crossed(self.strict_discordant, self.strict_later_wins, self.alpha)
        if acc == strict and (not acc or self._favoured(self.discordant, self.later_wins) == self._favoured(
                self.strict_discordant, self.strict_later_wins)):
            return None
        view, other = ("accountable", "strict") if acc else ("strict", "accountable")
        n, k = (self.discordant, self.later_wins) if acc else (self.strict_discordant, self.strict_later_wins)
        return (f"the {view} view favours {self._favoured(n, k)} beyond 1/alpha but the {other} view does not "
                "agree (infrastructure errors leave out or count as failures different pairs): not decided")

    def refusal(self) -> str:
        """Why the test will not decide: the arms' infrastructure errors differ beyond chance."""
        first, later = self.arms or ("the earlier arm", "the later arm")
        return (f"refused: infrastructure errors depend on the arm ({first} {self.errors_earlier}, {later} "
                f"{self.errors_later} of {self.pairs} pairs; e-value {self.error_e_value:.3g} >= 1/alpha), so "
                "leaving them out would censor one arm's failures; fix the failing infrastructure and rerun: "
                "not decided")

    @property
    def e_value(self) -> float:
        """The accountable view's e-value (pairs without an infrastructure error)."""
        return math.exp(min(700.0, log_e_value(self.discordant, self.later_wins)))

    @property
    def strict_e_value(self) -> float:
        """The strict view's e-value (an infrastructure error is a failure of its arm)."""
        return math.exp(min(700.0, log_e_value(self.strict_discordant, self.strict_later_wins)))

    @property
    def error_e_value(self) -> float:
        """The e-value against 'infrastructure errors strike both arms alike', on pairs where one arm errored."""
        return math.exp(min(700.0, log_e_value(self.error_discordant, self.later_only_errors)))

    def state(self) -> dict[str, Any]:
        """What the summary reports: the e-value, the anytime-valid interval and the counts behind them."""
        lo, hi = interval(self.discordant, self.later_wins, self.alpha)
        later = self.arms[1] if self.arms else "the later arm"
        first = self.arms[0] if self.arms else "the earlier arm"
        return {
            "test": "mixture SPRT on paired discordance (uniform mixture over theta; Ville's inequality); "
                    "decides only when the accountable and strict views agree, refuses when infrastructure "
                    "errors depend on the arm",
            "alpha": self.alpha, "threshold": round(1 / self.alpha, 6), "decided": self.decided,
            "refused": self.refused, "note": self.note(),
            "e_value": float(f"{self.e_value:.6g}"), "pairs": self.pairs, "pairs_with_infra_error": self.infra,
            "discordant_pairs": self.discordant, "later_arm_wins": self.later_wins,
            "strict": {"e_value": _e(self.strict_discordant, self.strict_later_wins),
                       "discordant_pairs": self.strict_discordant, "later_arm_wins": self.strict_later_wins},
            "infra_errors": {first: self.errors_earlier, later: self.errors_later,
                             "pairs_one_arm_errored": self.error_discordant,
                             "e_value_arm_dependent": _e(self.error_discordant, self.later_only_errors)},
            "theta": "P(the later arm completes | the pair is discordant); 0.5 = no difference",
            "theta_interval": [round(lo, 4), round(hi, 4)],
            "interval_note": f"anytime-valid {100 * (1 - self.alpha):g}% interval for P({later} wins a "
                             "discordant pair)",
        }
