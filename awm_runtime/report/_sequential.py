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
2023). Pairs with an infrastructure error on either side are not counted.
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


@dataclass(slots=True)
class SequentialTest:
    """The `StoppingRule` of `--until-decided`: asked after each finished pair, it says when to stop."""

    alpha: float = 0.05
    pairs: int = 0
    infra: int = 0
    discordant: int = 0
    later_wins: int = 0
    decided: bool = False
    arms: tuple[str, str] | None = None

    def pair_finished(self, pair: Sequence[dict[str, Any]]) -> str | None:
        """One pair (the earlier arm's record first); a stop reason once the test decides, else None."""
        a, b = pair[0], pair[-1]
        self.arms = self.arms or (str(a.get("arm")), str(b.get("arm")))
        self.pairs += 1
        if "error" in (a.get("outcome"), b.get("outcome")):
            self.infra += 1
            return None
        win_a, win_b = a.get("outcome") == "complete", b.get("outcome") == "complete"
        if win_a != win_b:
            self.discordant += 1
            self.later_wins += win_b
        if not self.decided and log_e_value(self.discordant, self.later_wins) >= math.log(1 / self.alpha):
            self.decided = True
            better = self.arms[1] if 2 * self.later_wins > self.discordant else self.arms[0]
            return f"decided: {better} completes more often (e-value {self.e_value:.3g} >= 1/alpha)"
        return None

    @property
    def e_value(self) -> float:
        return math.exp(min(700.0, log_e_value(self.discordant, self.later_wins)))

    def state(self) -> dict[str, Any]:
        """What the summary reports: the e-value, the anytime-valid interval and the counts behind them."""
        lo, hi = interval(self.discordant, self.later_wins, self.alpha)
        later = self.arms[1] if self.arms else "the later arm"
        return {
            "test": "mixture SPRT on paired discordance (uniform mixture over theta; Ville's inequality)",
            "alpha": self.alpha, "threshold": round(1 / self.alpha, 6), "decided": self.decided,
            "e_value": float(f"{self.e_value:.6g}"), "pairs": self.pairs, "pairs_with_infra_error": self.infra,
            "discordant_pairs": self.discordant, "later_arm_wins": self.later_wins,
            "theta": "P(the later arm completes | the pair is discordant); 0.5 = no difference",
            "theta_interval": [round(lo, 4), round(hi, 4)],
            "interval_note": f"anytime-valid {100 * (1 - self.alpha):g}% interval for P({later} wins a "
                             "discordant pair)",
        }
