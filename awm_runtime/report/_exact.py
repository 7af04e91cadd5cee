"""Exact p-values that never print 0: McNemar in log space, sign-flip tests by lattice convolution, Holm.

A p-value here is a `PValue`: its log10 (so 1e-400 survives), how it was computed (`exact` or
`monte_carlo` with the number of draws), the test's name, and the smallest p the test could give on
these data (a sign-flip test over 4 tasks can never go below 0.125). scipy and numpy are imported
when a test runs, never by `import awm_runtime`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

GROUPED_WORK = 300_000_000  # multiply-adds of the grouped convolution: about a second on a loaded core
EXACT_WORK = 20_000_000  # clusters x lattice width of the log-space convolution (extreme tails only)
ENUMERATE_UP_TO = 20  # off a lattice, 2^20 sign patterns are still enumerated exactly
MC_DRAWS = 100_000  # Monte Carlo resolution ~1e-5
MC_WORK = 100_000_000  # draws x clusters: 100,000 draws up to 1,000 tasks, fewer (coarser, stated) past it
SEED = 20261121
FLUSH = 1e-300  # relative to the mode: what the grouped convolution keeps
TINY = 1e-300  # the JSON number of a p below it (its log10 keeps the value)


@dataclass(frozen=True, slots=True)
class PValue:
    """A two-sided p-value with its provenance. `draws` is set for Monte Carlo values."""

    log10: float
    how: str  # "exact" | "monte_carlo"
    test: str
    min_log10: float | None = None  # the smallest attainable p on these data (log10), for exact tests
    draws: int | None = None
    hits: int | None = None  # Monte Carlo: draws at least as extreme

    @property
    def value(self) -> float:
        """The p as a float, never 0 (below 1e-300 the number is 1e-300; `log10` keeps the truth)."""
        return max(TINY, 10.0**self.log10)

    @property
    def floor(self) -> bool:
        """Monte Carlo found no draw as extreme: the value is an upper bound, (0 + 1) / (draws + 1)."""
        return self.how == "monte_carlo" and not self.hits

    def text(self) -> str:
        """How the value prints: exact values as numbers, Monte Carlo floors as `< 1e-5 (Monte Carlo, n = ...)`."""
        if self.how == "monte_carlo":
            n = f"{self.draws:,}"
            if self.floor:
                return f"< {fmt_log10(self.log10)} (Monte Carlo, n = {n})"
            return f"{fmt_log10(self.log10)} (Monte Carlo, n = {n})"
        return fmt_log10(self.log10)

    def fields(self, prefix: str) -> dict[str, Any]:
        """The summary.json fields of this p-value under `prefix` (e.g. `completion`)."""
        out: dict[str, Any] = {f"{prefix}_p": self.value, f"{prefix}_p_log10": self.log10,
                               f"{prefix}_p_text": self.text(), f"{prefix}_p_computed": self.how,
                               f"{prefix}_test": self.test}
        if self.draws is not None:
            out[f"{prefix}_p_draws"] = self.draws
        min_p = None if self.min_log10 is None else 10.0**self.min_log10
        out[f"{prefix}_p_min"] = None if min_p is None else max(TINY, float(f"{min_p:.4g}"))
        return out


def fmt_log10(log10: float) -> str:
    """A p from its log10: 3 significant digits, scientific below 1e-4, never `0`."""
    if log10 >= -4:
        return f"{10.0**log10:.3g}"
    exp = math.floor(log10)
    mant = 10.0 ** (log10 - exp)
    if mant >= 9.995:
        mant, exp = 1.0, exp + 1
    return f"{mant:.2g}e{exp}"


def _log10_sum_exp(logs: Any) -> float:
    import numpy as np
    from scipy.special import logsumexp

    arr = np.asarray(logs, dtype=float)
    return float(logsumexp(arr) / math.log(10)) if arr.size else -math.inf


def mcnemar(only_a: int, only_b: int) -> PValue:
    """Two-sided exact McNemar: binomial test of the discordant pairs at 1/2, in log space (no underflow)."""
    import numpy as np
    from scipy.stats import binom

    n = only_a + only_b
    if n == 0:
        return PValue(0.0, "exact", "McNemar exact", 0.0)
    k = min(only_a, only_b)
    if 2 * k == n:
        log10 = 0.0
    else:  # scipy's logcdf underflows to -inf far in the tail; its logpmf does not
        tail = _log10_sum_exp(binom.logpmf(np.arange(k + 1), n, 0.5))
        log10 = min(0.0, math.log10(2) + tail)
    return PValue(log10, "exact", "McNemar exact", min(0.0, (1 - n) * math.log10(2)))


def lattice(values: Sequence[float], *, max_scale: int = 10_000) -> tuple[list[int], float] | None:
    """The values as integers times a common step (rewards of a table are on a lattice), or None."""
    scale = 1
    while scale <= max_scale:
        ints = [round(v * scale) for v in values]
        if all(abs(v * scale - i) <= 1e-6 * max(1.0, abs(v * scale)) for v, i in zip(values, ints, strict=True)):
            g = 0
            for i in ints:
                g = math.gcd(g, abs(i))
            g = g or 1
            return [i // g for i in ints], g / scale
        scale *= 10
    return None


def sign_flip(cluster_sums: Sequence[float], *, draws: int = MC_DRAWS, seed: int = SEED,
              test: str = "sign-flip over tasks") -> PValue:
    """Two-sided p of a paired sign-flip test over clusters: exact where cheap, else Monte Carlo.

    Under no difference each cluster's summed (b - a) differences are as likely to carry the other
    sign; the statistic is their total. Zero sums are dropped (they do not change the null). Exact
    by convolution when the sums lie on a lattice (in log space, so nothing underflows), or by
    enumerating up to 2^20 patterns; otherwise seeded Monte Carlo, p = (hits + 1) / (draws + 1)."""
    sums = [float(s) for s in cluster_sums if s != 0.0]
    if len(sums) <= 1:
        return PValue(0.0, "exact", test, 0.0)
    grid = lattice(sums)
    if grid is not None:
        ints = [abs(i) for i in grid[0]]
        observed = abs(sum(grid[0]))
        grouped = _convolve_grouped(ints, observed, test)
        if grouped is not None:
            return grouped
        if len(ints) * (2 * sum(ints) + 1) <= EXACT_WORK:
            return _convolve(ints, observed, test)
    if len(sums) <= ENUMERATE_UP_TO:
        return _enumerate(sums, test)
    return _monte_carlo(sums, draws=draws, seed=seed, test=test, ints=grid[0] if grid is not None else None)


def _convolve_grouped(ints: list[int], observed: int, test: str) -> PValue | None:
    """The exact null distribution by convolving one binomial per distinct |sum| (c tasks of sum m add
    m * (2B - c), B ~ Bin(c, 1/2)), in linear space rescaled after each step. None when too large, or
    when the tail is below what doubles hold relative to the mode (then the log-space path decides)."""
    from collections import Counter

    import numpy as np
    from scipy.stats import binom

    groups = sorted(Counter(ints).items())
    width, work = 1, 0
    for m, c in groups:
        work += width * (2 * c * m + 1)
        width += 2 * c * m
    if work > GROUPED_WORK:
        return None
    dist, log_scale = np.ones(1), 0.0
    for m, c in groups:
        log_pmf = binom.logpmf(np.arange(c + 1), c, 0.5)
        top = float(log_pmf.max())
        step = np.zeros(2 * c * m + 1)
        step[:: 2 * m] = np.exp(log_pmf - top)
        dist = np.convolve(dist, step)
        peak = float(dist.max())
        dist /= peak
        dist[dist < FLUSH] = 0.0  # subnormal doubles make the next convolution ~100x slower
        log_scale += top + math.log(peak)
    total = (dist.size - 1) // 2
    tail = float(dist[: max(0, total - observed + 1)].sum() + dist[total + observed:].sum()) if observed else float(
        dist.sum())
    if tail <= 1e-280:  # below what the flushed values could still move
        return None
    log10 = min(0.0, math.log10(tail) + log_scale / math.log(10))
    n = len(ints)
    return PValue(log10, "exact", test, min(0.0, (1 - n) * math.log10(2)))


def _convolve(ints: list[int], observed: int, test: str) -> PValue:
    """The exact null distribution of sum(+-m_i) on the integer lattice, as log-probabilities."""
    import numpy as np

    total = sum(ints)
    logp = np.full(2 * total + 1, -np.inf)
    logp[total] = 0.0  # index total is 0
    half = math.log(0.5)
    span = 0
    for m in sorted(ints):
        new = np.full_like(logp, -np.inf)
        lo, hi = total - span, total + span + 1
        np.logaddexp(new[lo + m:hi + m], logp[lo:hi] + half, out=new[lo + m:hi + m])
        np.logaddexp(new[lo - m:hi - m], logp[lo:hi] + half, out=new[lo - m:hi - m])
        logp, span = new, span + m
    values = np.arange(-total, total + 1)
    tail = logp[np.abs(values) >= observed]
    log10 = min(0.0, _log10_sum_exp(tail))
    extreme = logp[np.abs(values) == total]  # the most extreme outcome: all signs one way
    return PValue(log10, "exact", test, min(0.0, _log10_sum_exp(extreme)))


def _enumerate(sums: list[float], test: str) -> PValue:
    import numpy as np

    s = np.asarray(sums)
    n = s.size
    patterns = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1) * 2 - 1
    totals = np.abs(patterns @ s)
    observed = abs(s.sum())
    hits = int(np.count_nonzero(totals >= observed * (1 - 1e-12) - 1e-12))
    most = int(np.count_nonzero(totals >= totals.max() * (1 - 1e-12) - 1e-12))
    return PValue(math.log10(hits) - n * math.log10(2), "exact", test, math.log10(most) - n * math.log10(2))


def _monte_carlo(sums: list[float], *, draws: int, seed: int, test: str, ints: list[int] | None = None) -> PValue:
    """Seeded sign-flip draws: random bits unpacked to 0/1 rows, T = 2 (bits @ s) - sum(s). On a lattice the
    integers are used in float32 (exact below 2^24), else float64."""
    import numpy as np

    exact_ints = ints is not None and sum(abs(i) for i in ints) < 2**24
    s = np.asarray(ints if exact_ints else sums, dtype=np.float32 if exact_ints else np.float64)
    draws = int(max(10_000, min(draws, MC_WORK // s.size)))
    rng = np.random.default_rng(seed)
    total = float(s.sum(dtype=np.float64))
    observed = abs(total) - (0.5 if exact_ints else 1e-12 * max(1.0, abs(total)))
    hits, left = 0, draws
    chunk = max(1, 4_000_000 // s.size)
    while left:
        n = min(chunk, left)
        bits = np.unpackbits(rng.integers(0, 256, size=(n, (s.size + 7) // 8), dtype=np.uint8), axis=1,
                             count=s.size).astype(s.dtype)
        hits += int(np.count_nonzero(np.abs(2 * (bits @ s).astype(np.float64) - total) >= observed))
        left -= n
    return PValue(math.log10((hits + 1) / (draws + 1)), "monte_carlo", test, None, draws, hits)


def fisher(complete_a: int, n_a: int, complete_b: int, n_b: int) -> PValue:
    """Two-sided Fisher's exact test of two independent completion rates (an unpaired comparison)."""
    from scipy.stats import fisher_exact

    if not n_a or not n_b:
        return PValue(0.0, "exact", "Fisher exact (unpaired)", 0.0)
    p = float(fisher_exact([[complete_a, n_a - complete_a], [complete_b, n_b - complete_b]]).pvalue)
    return PValue(math.log10(max(p, 5e-324)), "exact", "Fisher exact (unpaired)", None)


def permutation_unpaired(a: Sequence[float], b: Sequence[float], *, draws: int = 20_000,
                         seed: int = SEED) -> PValue:
    """Two-sided Monte Carlo permutation test of a difference in means between independent samples."""
    import numpy as np

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    test = "permutation of means (unpaired)"
    if not x.size or not y.size:
        return PValue(0.0, "exact", test, 0.0)
    pooled = np.concatenate([x, y])
    observed = abs(y.mean() - x.mean()) * (1 - 1e-12) - 1e-12
    rng = np.random.default_rng(seed)
    draws = int(max(2_000, min(draws, MC_WORK // pooled.size)))
    hits, left, chunk = 0, draws, max(1, 2_000_000 // pooled.size)
    while left:
        n = min(chunk, left)
        perm = rng.permuted(np.broadcast_to(pooled, (n, pooled.size)), axis=1)
        hits += int(np.count_nonzero(np.abs(perm[:, x.size:].mean(1) - perm[:, :x.size].mean(1)) >= observed))
        left -= n
    return PValue(math.log10((hits + 1) / (draws + 1)), "monte_carlo", test, None, draws, hits)


def holm_log10(log10s: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values, in log10 (None entries, comparisons without a test, skipped)."""
    ranked = sorted((p, i) for i, p in enumerate(log10s) if p is not None)
    out: list[float | None] = [None] * len(log10s)
    running = -math.inf
    for rank, (p, i) in enumerate(ranked):
        running = max(running, min(0.0, math.log10(len(ranked) - rank) + p))
        out[i] = running
    return out


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values on plain floats (a p of 0 stays at the smallest float)."""
    logs = [None if p is None else math.log10(max(p, 5e-324)) for p in pvalues]
    return [None if p is None else min(1.0, 10.0**p) for p in holm_log10(logs)]
