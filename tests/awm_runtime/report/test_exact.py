"""Exact p-values: recomputed with statsmodels (McNemar, Holm) and by brute-force enumeration (sign-flip);
never 0, never a bare Monte Carlo floor, the smallest attainable p stated."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests

from awm_runtime.report._exact import fmt_log10, holm, holm_log10, lattice, mcnemar, sign_flip


def _brute(sums: list[float]) -> float:
    nz = [s for s in sums if s]
    observed = abs(sum(nz))
    hits = sum(abs(sum(e * s for e, s in zip(signs, nz, strict=True))) >= observed - 1e-9
               for signs in itertools.product((1, -1), repeat=len(nz)))
    return hits / 2 ** len(nz)


@pytest.mark.parametrize(("b", "c"), [(0, 0), (3, 3), (0, 5), (1, 9), (10, 30), (2, 10), (47, 80), (0, 60)])
def test_mcnemar_matches_statsmodels(b: int, c: int) -> None:
    expected = sm_mcnemar([[5, b], [c, 7]], exact=True).pvalue
    assert mcnemar(b, c).value == pytest.approx(expected, rel=1e-9)


def test_mcnemar_never_underflows_to_zero() -> None:
    """Past ~1,075 discordant pairs all one way, the binomial underflows doubles; in log space it does not."""
    p = mcnemar(0, 2000)
    assert p.log10 == pytest.approx(math.log10(2) - 2000 * math.log10(2), rel=1e-9)
    assert p.value > 0 and p.text() == "1.7e-602" and fmt_log10(p.log10) != "0"
    assert mcnemar(900, 1100).value == pytest.approx(sm_mcnemar([[0, 900], [1100, 0]], exact=True).pvalue, rel=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_sign_flip_convolution_equals_enumeration(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ints = [float(x) for x in rng.integers(-4, 5, size=11)]
    assert sign_flip(ints).value == pytest.approx(_brute(ints), rel=1e-9)
    tenths = [round(x / 10, 1) for x in rng.integers(-19, 20, size=10)]  # rewards of a table: a 0.1 lattice
    p = sign_flip(tenths)
    assert p.how == "exact" and p.value == pytest.approx(_brute(tenths), rel=1e-9)


def test_off_lattice_small_samples_are_enumerated_exactly() -> None:
    sums = [0.3141, -0.27, 1.4142, 0.5772, 2.7182, -0.6931]
    assert lattice([math.pi, 1.0]) is None
    p = sign_flip([*sums, math.pi])
    assert p.how == "exact" and p.value == pytest.approx(_brute([*sums, math.pi]), rel=1e-9)


def test_monte_carlo_is_marked_with_its_draws_and_never_a_bare_floor() -> None:
    strong = [math.pi * (1 + i / 997) for i in range(40)]  # off the lattice, 40 tasks all one way
    p = sign_flip(strong, draws=20_000)
    assert p.how == "monte_carlo" and p.hits == 0 and p.floor and p.value > 0
    assert p.text() == "< 5e-5 (Monte Carlo, n = 20,000)"
    fields = p.fields("reward")
    assert fields["reward_p_computed"] == "monte_carlo" and fields["reward_p_draws"] == 20_000
    weak = [math.pi * (1 + i / 997) * (1 if i % 2 else -1) for i in range(40)]
    q = sign_flip(weak, draws=20_000)
    assert q.how == "monte_carlo" and q.hits and q.text().endswith("(Monte Carlo, n = 20,000)")


def test_the_smallest_attainable_p_is_stated() -> None:
    p = sign_flip([1.0, 2.0, 1.0, 3.0])  # four tasks: at best 2 of 16 patterns
    assert p.value == pytest.approx(0.125) and p.fields("c")["c_p_min"] == pytest.approx(0.125)
    assert mcnemar(0, 3).fields("c")["c_p_min"] == pytest.approx(0.25)
    big = mcnemar(0, 40).fields("c")
    assert big["c_p_min"] < 1e-9


@pytest.mark.parametrize("ps", [[0.01, 0.04, 0.03], [0.01, 0.02, 0.03, 0.5], [1e-12, 0.2, 0.04, 0.049, 0.7]])
def test_holm_matches_statsmodels(ps: list[float]) -> None:
    expected = multipletests(ps, method="holm")[1]
    assert holm(ps) == pytest.approx(list(expected), rel=1e-9)
    logs = holm_log10([math.log10(p) for p in ps])
    assert [10**x for x in logs if x is not None] == pytest.approx(list(expected), rel=1e-9)


def test_holm_runs_on_log_values_below_the_smallest_double() -> None:
    adjusted = holm_log10([-700.0, -2.0])
    assert adjusted[0] == pytest.approx(-700 + math.log10(2)) and adjusted[1] == -2.0


def test_the_grouped_and_the_log_space_convolutions_agree() -> None:
    from awm_runtime.report._exact import _convolve, _convolve_grouped

    rng = np.random.default_rng(11)
    ints = [int(x) for x in rng.integers(1, 6, size=300)]
    signs = rng.choice([-1, 1], size=300, p=[0.4, 0.6])
    observed = abs(int(np.dot(signs, ints)))
    grouped = _convolve_grouped(ints, observed, "t")
    assert grouped is not None and grouped.log10 == pytest.approx(_convolve(ints, observed, "t").log10, abs=1e-9)


def test_an_extreme_tail_falls_back_to_log_space_and_stays_exact() -> None:
    p = sign_flip([1.0] * 1200)  # 1,200 tasks all one way: 2 / 2^1200, below what doubles hold
    assert p.how == "exact" and p.log10 == pytest.approx((1 - 1200) * math.log10(2), rel=1e-9)
    assert p.value > 0 and p.text().endswith("e-361")


def test_monte_carlo_on_a_lattice_counts_ties_exactly() -> None:
    from awm_runtime.report._exact import _monte_carlo

    sums = [1.0, -1.0] * 15 + [1.0] * 6  # 36 tasks, total 6
    mc = _monte_carlo(sums, draws=100_000, seed=3, test="t", ints=[int(s) for s in sums])
    assert mc.value == pytest.approx(sign_flip(sums).value, abs=0.005)
