"""Intervals of stated coverage: their levels against scipy's own distributions (an independent implementation),
and their coverage measured by simulation: 1,000 draws of repeats from known distributions, the share of
intervals that contain the true value within 3 points of the level each interval states."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from sizing.criteria.stats import (
    HIGHER,
    INCONCLUSIVE,
    LOWER,
    UNCHANGED,
    WITHIN_RUN_BATCHES,
    WITHIN_RUN_MIN_SECONDS,
    Interval,
    batch_means,
    compare,
    effect_verdict,
    mann_whitney_counts,
    median_interval,
    order_statistic_level,
    run_compare,
    run_mean_interval,
    run_ratio_interval,
    shift_interval,
    shift_level,
    t_cdf,
    t_quantile,
    welch_df,
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


# ------------------------------------------------------------------------------------ within one run


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 7, 8, 13])
def test_t_distribution_equals_scipys(df: int) -> None:
    for t in (-3.2, -1.0, 0.0, 0.4, 2.13, 6.0):
        assert t_cdf(t, df) == pytest.approx(scipy_stats.t.cdf(t, df), abs=1e-12)
    for p in (0.05, 0.9, 0.95, 0.975):
        assert t_quantile(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-9)


def test_batch_means_cut_the_seconds_into_equal_windows_dropping_the_first_left_over() -> None:
    values = [1000.0] * 3 + [float(x) for x in range(200)]  # 203 seconds: 5 windows of 40, the first 3 dropped
    spread = batch_means(values)
    means = [sum(range(i * 40, (i + 1) * 40)) / 40 for i in range(5)]  # 19.5, 59.5, ..., 179.5
    assert (spread.batches, spread.seconds) == (WITHIN_RUN_BATCHES, 203)
    assert spread.mean == pytest.approx(np.mean(means))
    assert spread.se == pytest.approx(np.std(means, ddof=1) / math.sqrt(5))
    assert batch_means([5.0] * (WITHIN_RUN_MIN_SECONDS - 1)) is None  # too short for windows this long
    assert batch_means([5.0] * WITHIN_RUN_MIN_SECONDS).se == 0.0


def test_a_run_interval_states_its_nominal_level_and_one_run() -> None:
    interval = run_mean_interval(9000.0, 0.01, 5, confidence=0.95)
    half = scipy_stats.t.ppf(0.975, 4) * 90.0
    assert (interval.low, interval.high) == (pytest.approx(9000 - half), pytest.approx(9000 + half))
    assert (interval.n, interval.level) == (1, 0.95) and interval.reaches(0.95)


def test_one_run_against_one_run_concludes_where_the_seconds_separate_them() -> None:
    # seed 001's order of effect: SSD about 19k, one HDD about 300 msg/s, each run's seconds 2 % noisy
    ssd_vs_hdd = run_compare(19_000.0, 0.02, 5, 300.0, 0.02, 5)
    assert ssd_vs_hdd.verdict == LOWER and ssd_vs_hdd.interval.estimate == pytest.approx(300 / 19_000 - 1)
    assert run_compare(9_000.0, 0.005, 5, 9_050.0, 0.005, 5).verdict == UNCHANGED
    assert run_compare(9_000.0, 0.08, 5, 9_900.0, 0.08, 5).verdict == INCONCLUSIVE  # +10 %, seconds too noisy
    assert welch_df(0.02, 5, 0.02, 5) == 8 and welch_df(0.02, 5, 0.0, 5) == 4
    assert ssd_vs_hdd.describe().endswith("(90 %, n = 1 vs 1, within one run; run-to-run variation not measured): "
                                          "lower")


SECONDS_DRAWS = 4_000


def ar1_seconds(rng: np.random.Generator, phi: float, mean: float, sd: float, seconds: int) -> np.ndarray:
    """SECONDS_DRAWS series of per-second rates: AR(1) around `mean` with stationary standard deviation `sd`."""
    noise = rng.standard_normal((SECONDS_DRAWS, seconds)) * sd * math.sqrt(1 - phi ** 2)
    x = np.empty_like(noise)
    x[:, 0] = rng.standard_normal(SECONDS_DRAWS) * sd
    for t in range(1, seconds):
        x[:, t] = phi * x[:, t - 1] + noise[:, t]
    return mean + x


@pytest.mark.parametrize("phi", [0.0, 0.5, 0.8])
def test_within_run_intervals_cover_as_often_as_they_say_on_autocorrelated_seconds(phi: float) -> None:
    # The shortest series given an interval: its windows are shortest against the autocorrelation.
    rng = np.random.default_rng(int(phi * 10) + 3)
    seconds = WITHIN_RUN_MIN_SECONDS
    base = ar1_seconds(rng, phi, 9_000.0, 450.0, seconds)
    other = ar1_seconds(rng, phi, 10_800.0, 540.0, seconds)  # true ratio 1.2
    means, ratios = [], []
    for a, b in zip(base, other, strict=True):
        sa, sb = batch_means(a), batch_means(b)
        means.append(run_mean_interval(sa.mean, sa.rse, sa.batches))
        ratios.append(run_ratio_interval(sa.mean, sa.rse, sa.batches, sb.mean, sb.rse, sb.batches))
    mean_covered = np.mean([i.low <= 9_000.0 <= i.high for i in means])
    ratio_covered = np.mean([i.low <= 0.2 <= i.high for i in ratios])
    print(f"AR(1) phi {phi}, {seconds} s: one run's mean stated {means[0].level:.2f}, measured {mean_covered:.3f};"
          f" ratio stated {ratios[0].level:.2f}, measured {ratio_covered:.3f}")
    assert abs(mean_covered - means[0].level) <= 0.03
    assert abs(ratio_covered - ratios[0].level) <= 0.03
    if phi == 0.8:  # the same seconds in 2 s windows, taken as independent, cover far less: the check bites
        naive = [batch_means(a, batches=seconds // 2) for a in base[:500]]
        naive_covered = np.mean([abs(s.mean - 9_000.0) <= 1.96 * s.se for s in naive])
        print(f"  seconds taken as independent: measured {naive_covered:.3f}")
        assert naive_covered < 0.7


def test_a_stored_figure_is_a_finite_number_and_nothing_else_is():
    """Known answers for sizing.criteria.stats.number, the one rule every reader of table rows uses."""
    from sizing.criteria.stats import number

    assert [number(v) for v in (3, 2.5, np.float64(1.5), np.int64(7))] == [3.0, 2.5, 1.5, 7.0]
    assert [number(v) for v in (None, math.nan, math.inf, -math.inf, True, False, "x", {})] == [None] * 8


def test_batch_variation_is_the_mean_within_window_cv_with_the_windows_spread() -> None:
    """Known answer: five windows of 40 s alternating mean +- d (d = 10, 20, 10, 20, 10 around 100): each window's
    CV is d * sqrt(40 / 39) / 100, computed here by hand; a flat run has none; a drift between windows is no chop."""
    from sizing.criteria.stats import batch_variation

    swings = [10.0, 20.0, 10.0, 20.0, 10.0]
    values = [100.0 + (d if i % 2 else -d) for d in swings for i in range(40)]
    cvs = [d * math.sqrt(40 / 39) / 100 for d in swings]
    spread = batch_variation(values)
    mean = sum(cvs) / 5
    assert spread.batches == 5 and spread.seconds == 200
    assert spread.mean == pytest.approx(mean)
    assert spread.se == pytest.approx(math.sqrt(sum((c - mean) ** 2 for c in cvs) / 4 / 5))
    drifting = [level + (1.0 if i % 2 else -1.0) for level in (100.0, 200.0, 300.0, 400.0, 500.0) for i in range(40)]
    assert batch_variation(drifting).mean < 0.011  # 1 / 100 at most: the steps between windows are not counted
    assert batch_variation([100.0] * 200).mean == 0.0
    assert batch_variation([100.0] * (WITHIN_RUN_MIN_SECONDS - 1)) is None
    assert batch_variation([0.0] * 200) is None  # a window with nothing in it has no variation to speak of


@pytest.mark.parametrize("phi", [0.0, 0.5, 0.8])
def test_the_choppiness_interval_covers_as_often_as_it_says_on_autocorrelated_seconds(phi: float) -> None:
    """sizing.criteria.stats.batch_variation's figure with run_mean_interval, as the findings state it for one run: the
    known answer is the within-window CV of the same AR(1) process, from a separate, large simulation."""
    from sizing.criteria.stats import batch_variation

    rng = np.random.default_rng(int(phi * 10) + 11)
    seconds = WITHIN_RUN_MIN_SECONDS
    truth_runs = ar1_seconds(rng, phi, 9_000.0, 450.0, seconds)
    truth = float(np.mean([batch_variation(run).mean for run in truth_runs]))
    intervals = []
    for run in ar1_seconds(rng, phi, 9_000.0, 450.0, seconds):
        spread = batch_variation(run)
        intervals.append(run_mean_interval(spread.mean, spread.rse, spread.batches))
    covered = np.mean([i.low <= truth <= i.high for i in intervals])
    print(f"AR(1) phi {phi}: within-window CV {truth:.4f}, stated {intervals[0].level:.2f}, measured {covered:.3f}")
    assert abs(covered - intervals[0].level) <= 0.03


def test_a_sectioned_percentile_spread_is_taken_around_the_whole_runs_figure() -> None:
    """Known answer for sizing.criteria.stats.sectioned_rse, worked by hand on logs: windows 50, 200, 100, 100, 100
    around a whole run's p95 of 100 give sqrt(2 ln(2)^2 / 4 / 5); around 200 (not their mean) sqrt((ln(4)^2 + 0 + 3
    ln(2)^2) / 4 / 5); too few samples beyond the percentile in a window, a missing window figure or one window give
    none. The level interval is on logs: 100 x exp(+-t(4) x rse)."""
    from sizing.criteria.stats import SECTION_TAIL_MIN, SECTIONED, sectioned_rse

    figures, samples = [50.0, 200.0, 100.0, 100.0, 100.0], [3_600] * 5
    ln2 = math.log(2)
    assert sectioned_rse(100.0, figures, samples, 0.95) == pytest.approx(math.sqrt(2 * ln2 ** 2 / 4 / 5))
    assert sectioned_rse(200.0, figures, samples, 0.95) == pytest.approx(math.sqrt(7 * ln2 ** 2 / 4 / 5))
    level = run_mean_interval(100.0, 0.1, 5, method=SECTIONED)
    assert (level.low, level.high) == pytest.approx((100 * math.exp(-0.1 * scipy_stats.t.ppf(0.975, 4)),
                                                     100 * math.exp(0.1 * scipy_stats.t.ppf(0.975, 4))))
    tail_short = [math.ceil(SECTION_TAIL_MIN / 0.001) - 1] * 5  # p99.9 needs 10,000 samples a window
    assert sectioned_rse(100.0, figures, tail_short, 0.999) is None
    assert sectioned_rse(100.0, figures, [10_000] * 5, 0.999) is not None
    assert sectioned_rse(100.0, [*figures[:4], math.nan], samples, 0.95) is None
    assert sectioned_rse(100.0, figures[:1], samples[:1], 0.95) is None


MESSAGES_PER_SECOND = 100
LOG_SD_SECOND, LOG_SD_MESSAGE = 0.4, 0.6  # the per-second level's and the message's own spread of log latency


def ar1_latency_runs(rng: np.random.Generator, phi: float, draws: int, seconds: int) -> np.ndarray:
    """`draws` runs of MESSAGES_PER_SECOND latencies (ms) a second: log-normal around 20 ms, the second's level an
    AR(1) (stationary sd LOG_SD_SECOND), each message's own spread on top; read through the histogram's buckets
    as the platform reads them. Shape (draws, seconds, messages)."""
    from sizing.contract.histogram import bucket_value, buckets_of

    level = LOG_SD_SECOND * ar1_seconds_of(rng, phi, draws, seconds)
    logs = math.log(20.0) + level[:, :, None] + LOG_SD_MESSAGE * rng.standard_normal(
        (draws, seconds, MESSAGES_PER_SECOND))
    return bucket_value(buckets_of(np.exp(logs) * 1000.0)) / 1000.0


def ar1_seconds_of(rng: np.random.Generator, phi: float, draws: int, seconds: int) -> np.ndarray:
    """Unit-variance stationary AR(1) series."""
    x = np.empty((draws, seconds))
    x[:, 0] = rng.standard_normal(draws)
    noise = rng.standard_normal((draws, seconds)) * math.sqrt(1 - phi ** 2)
    for t in range(1, seconds):
        x[:, t] = phi * x[:, t - 1] + noise[:, t]
    return x


def nearest_rank(samples: np.ndarray, q: float) -> np.ndarray:
    """Nearest-rank quantile along the last axis (sizing.contract.histogram.quantile_from_counts' rule)."""
    rank = max(1, math.ceil(q * samples.shape[-1] - 1e-9))
    return np.partition(samples, rank - 1, axis=-1)[..., rank - 1]


@pytest.mark.parametrize("phi", [0.0, 0.5, 0.8])
@pytest.mark.parametrize("quantile", [0.95, 0.99])
def test_a_percentiles_interval_within_one_run_covers_as_often_as_it_says(phi: float, quantile: float) -> None:
    """A percentile within one run (the whole run's nearest-rank percentile, its spread by
    sizing.criteria.stats.sectioned_rse over window_layout's windows, run_mean_interval; two runs: run_ratio_interval)
    against the known answer: the percentile of the simulated process's stationary log-normal distribution (exp(log 20 +
    z_q * sqrt(0.4^2 + 0.6^2))). Runs of the shortest length given a percentile an interval, through the histogram's 1 %
    buckets."""
    from scipy.stats import norm

    from sizing.criteria.stats import SECTION_MIN_SECONDS, SECTIONED, SECTIONED_RATIO, sectioned_rse, window_layout

    rng = np.random.default_rng(int(phi * 10) + int(quantile * 1000))
    seconds, draws = SECTION_MIN_SECONDS, 2_000
    truth = 20.0 * math.exp(norm.ppf(quantile) * math.hypot(LOG_SD_SECOND, LOG_SD_MESSAGE))
    dropped, size = window_layout(seconds)
    intervals, ratios = [], []
    for _chunk in range(4):  # chunks of 500 runs bound the memory (500 x 240 x 100 latencies)
        runs = ar1_latency_runs(rng, phi, draws // 4, seconds)
        whole = nearest_rank(runs.reshape(len(runs), -1), quantile)
        windows = runs[:, dropped:].reshape(len(runs), WITHIN_RUN_BATCHES, size * MESSAGES_PER_SECOND)
        per_window = nearest_rank(windows, quantile)
        rses = [sectioned_rse(float(w), list(f), [size * MESSAGES_PER_SECOND] * WITHIN_RUN_BATCHES, quantile)
                for w, f in zip(whole, per_window, strict=True)]
        intervals += [run_mean_interval(float(w), r, WITHIN_RUN_BATCHES, method=SECTIONED)
                      for w, r in zip(whole, rses, strict=True)]
        half = len(whole) // 2  # the first half against the second: two runs of one process, the true ratio 1
        ratios += [run_ratio_interval(float(a), ra, WITHIN_RUN_BATCHES, float(b), rb, WITHIN_RUN_BATCHES,
                                      method=SECTIONED_RATIO)
                   for a, ra, b, rb in zip(whole[:half], rses[:half], whole[half:], rses[half:], strict=True)]
    covered = np.mean([i.low <= truth <= i.high for i in intervals])
    ratio_covered = np.mean([i.low <= 0.0 <= i.high for i in ratios])
    print(f"AR(1) phi {phi}, p{quantile * 100:g}: stated {intervals[0].level:.2f}, measured {covered:.3f}; ratio "
          f"stated {ratios[0].level:.2f}, measured {ratio_covered:.3f} ({len(ratios)} pairs)")
    assert abs(covered - intervals[0].level) <= 0.03
    assert abs(ratio_covered - ratios[0].level) <= 0.03
