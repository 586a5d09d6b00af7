"""Intervals of stated coverage: their levels against scipy's own distributions (an independent implementation),
and their coverage measured by simulation: 1,000 draws of repeats from known distributions, the share of
intervals that contain the true value within 3 points of the level each interval states."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from sizing.stats import (
    HIGHER,
    INCONCLUSIVE,
    LOWER,
    UNCHANGED,
    Interval,
    compare,
    effect_verdict,
    mann_whitney_counts,
    median_interval,
    order_statistic_level,
    shift_interval,
    shift_level,
)

DRAWS = 1_000


def test_three_repeats_give_min_to_max_at_75_percent_never_95() -> None:
    interval = median_interval([110.0, 100.0, 120.0], confidence=0.95)
    assert (interval.estimate, interval.low, interval.high, interval.n) == (110.0, 100.0, 120.0, 3)
    assert interval.level == pytest.approx(0.75)  # 1 - 2 / 2^3: the level it has, not the one asked for
    assert not interval.reaches(0.95) and interval.reaches(0.75)
    assert interval.describe("{:,.0f}") == "110 [100, 120] (75 %, n = 3)"


@pytest.mark.parametrize("n", range(2, 16))
def test_order_statistic_levels_equal_scipys_binomial(n: int) -> None:
    for k in range(1, n // 2 + 1):
        assert order_statistic_level(n, k) == pytest.approx(1 - 2 * scipy_stats.binom.cdf(k - 1, n, 0.5))


def test_the_narrowest_interval_that_reaches_the_level_is_chosen() -> None:
    values = list(range(1, 11))  # n = 10: k = 1 covers 99.8 %, k = 2 97.9 %, k = 3 89.1 %
    assert (median_interval(values, 0.95).low, median_interval(values, 0.95).high) == (2, 9)
    assert median_interval(values, 0.95).level == pytest.approx(1 - 2 * scipy_stats.binom.cdf(1, 10, 0.5))
    assert (median_interval(values, 0.85).low, median_interval(values, 0.85).high) == (3, 8)


def test_one_repeat_has_no_interval_and_nan_is_ignored() -> None:
    one = median_interval([987.0, math.nan])
    assert one.estimate == 987.0 and not one.has_interval and one.level == 0
    assert one.describe("{:.0f}") == "987 (n = 1, no interval)"
    with pytest.raises(ValueError, match="at least one finite value"):
        median_interval([math.nan])
    with pytest.raises(ValueError, match="confidence"):
        median_interval([1.0, 2.0], confidence=1.5)


@pytest.mark.parametrize(("m", "n"), [(1, 1), (2, 3), (3, 3), (4, 5), (6, 6)])
def test_mann_whitney_null_distribution_equals_brute_force_enumeration(m: int, n: int) -> None:
    # Every way to place the first sample's m values among m + n ranks, and its U (pairs the second sample wins).
    expected = [0] * (m * n + 1)
    for first in itertools.combinations(range(m + n), m):
        second = [r for r in range(m + n) if r not in first]
        expected[sum(1 for x in first for y in second if y > x)] += 1
    assert list(mann_whitney_counts(m, n)) == expected


def test_three_against_three_reaches_90_percent_and_no_more() -> None:
    assert shift_level(3, 3, 1) == pytest.approx(0.9)  # 1 - 2 / C(6, 3)
    interval = shift_interval([100.0, 101.0, 99.0], [110.0, 112.0, 108.0], confidence=0.9)
    assert interval.level == pytest.approx(0.9)
    assert interval.low == pytest.approx(108 / 101 - 1) and interval.high == pytest.approx(112 / 99 - 1)
    assert interval.estimate == pytest.approx(110 / 100 - 1)
    assert not shift_interval([100.0, 101.0, 99.0], [110.0, 112.0, 108.0], confidence=0.95).reaches(0.95)


def test_verdicts_follow_the_interval_and_the_practical_threshold() -> None:
    assert compare([100.0, 101.0, 99.0], [110.0, 112.0, 108.0]).verdict == HIGHER
    assert compare([110.0, 112.0, 108.0], [100.0, 101.0, 99.0]).verdict == LOWER
    assert compare([100.0, 101.0, 99.0], [100.5, 101.5, 99.5]).verdict == UNCHANGED  # within +-5 %
    assert compare([100.0, 130.0, 90.0], [105.0, 95.0, 125.0]).verdict == INCONCLUSIVE  # straddles
    assert compare([100.0, 101.0], [110.0, 112.0]).verdict == INCONCLUSIVE  # 2 vs 2: at most 66.7 %
    assert compare([100.0], [150.0]).verdict == INCONCLUSIVE  # 1 vs 1: no interval at all
    # +3 % for sure, but less than the practical 5 %: neither higher nor unchanged
    assert effect_verdict(Interval(0.03, 0.01, 0.06, 3, 0.9)) == INCONCLUSIVE
    assert "n = 3 vs 3" in compare([100.0, 101.0, 99.0], [110.0, 112.0, 108.0]).describe()


@pytest.mark.parametrize("n", [3, 4, 5, 8])
@pytest.mark.parametrize(("name", "draw", "true_median"), [
    ("normal", lambda rng, size: rng.normal(40_000, 2_000, size), 40_000.0),
    ("lognormal", lambda rng, size: rng.lognormal(math.log(250.0), 0.6, size), 250.0),
    ("exponential", lambda rng, size: rng.exponential(30.0, size), 30.0 * math.log(2)),
])
def test_median_intervals_cover_as_often_as_they_say(name: str, draw, true_median: float, n: int) -> None:
    rng = np.random.default_rng(7 + n)
    intervals = [median_interval(draw(rng, n)) for _ in range(DRAWS)]
    stated = intervals[0].level
    assert all(i.level == stated for i in intervals)
    covered = np.mean([i.low <= true_median <= i.high for i in intervals])
    print(f"{name} n={n}: stated {stated:.3f}, measured {covered:.3f}")
    assert abs(covered - stated) <= 0.03, (name, n, stated, covered)


@pytest.mark.parametrize(("m", "n"), [(3, 3), (4, 4), (3, 5)])
@pytest.mark.parametrize("true_ratio", [1.0, 1.1])
def test_relative_effect_intervals_cover_the_true_ratio_as_often_as_they_say(m: int, n: int,
                                                                             true_ratio: float) -> None:
    # Repeats of a throughput with a multiplicative spread; the variant is the same distribution scaled, so the
    # true relative effect is exactly true_ratio - 1.
    rng = np.random.default_rng(11 + m * n)
    effects = [compare(rng.lognormal(math.log(9_000), 0.05, m), true_ratio * rng.lognormal(math.log(9_000), 0.05, n))
               for _ in range(DRAWS)]
    stated = effects[0].interval.level
    covered = np.mean([e.interval.low <= true_ratio - 1 <= e.interval.high for e in effects])
    false_alarms = np.mean([e.verdict in (HIGHER, LOWER) for e in effects]) if true_ratio == 1.0 else 0.0
    print(f"{m} vs {n}, ratio {true_ratio}: stated {stated:.3f}, measured {covered:.3f}, false alarms {false_alarms}")
    assert abs(covered - stated) <= 0.03
    assert false_alarms <= 1 - stated + 0.01  # a 'higher'/'lower' on equal runs is at most the stated error rate
