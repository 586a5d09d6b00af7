"""Uncertainty across repeats: exact, distribution-free intervals whose coverage is stated, never assumed.

A sizing campaign affords one to five repeats of a config. With so few, normal-theory and bootstrap intervals
overstate what they cover: the percentile bootstrap of three repeats' mean is [min, max], which covers the
median of the repeats' distribution 75 % of the time, not the 95 % it used to be labelled with. So the platform
uses intervals whose coverage is exact for any continuous distribution, and says what that coverage is:

- one sample (a config's repeats): the median, with the order-statistic interval [x_(k), x_(n+1-k)] of coverage
  1 - 2 P(Bin(n, 1/2) <= k - 1): 50 % for n = 2, 75 % for n = 3, 87.5 % for n = 4, 93.75 % for n = 5;
- two samples (a variant against its baseline): the shift between them, estimated by Hodges-Lehmann (the median
  of the m x n pairwise differences), with the exact Mann-Whitney interval [d_(k), d_(mn+1-k)] (90 % for
  3 vs 3), on log values for a relative effect ("p99 -12 % [-20 %, -3 %]").

The level asked for is a wish: every Interval carries the level it truly has and its n, and `Effect.verdict`
says "inconclusive" when that level falls short of the one asked for. Pure (math only); tests/test_stats.py checks
the levels against scipy and the coverage by simulation.

One repeat (the seeds' studies ran each test once) has no spread between repeats, but its steady seconds still
say how precisely the run measured its own mean rate: batch means (`batch_means`) cut the seconds into
WITHIN_RUN_BATCHES non-overlapping windows, long enough that their means are nearly independent even when
successive seconds are not, and a t interval over the window means (`run_mean_interval`; two runs: `run_compare`,
Welch t on log means). A percentile's spread comes from the same windows' percentiles around the whole run's
(`sectioned_rse`). Their level is nominal, not exact: simulated on AR(1) seconds (phi 0, 0.5, 0.8) over
WITHIN_RUN_MIN_SECONDS or more they cover within 3 points of what they state. They say nothing about how a second
run would differ: WITHIN_RUN labels them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

# The level a claim about one config's repeats is stated at (the interval says what it truly reaches).
INTERVAL_CONFIDENCE = 0.95
# The level a comparison must reach to be a finding: 90 % is the highest 3 repeats against 3 can give (1 - 2/20),
# so a campaign with the seeds' three repeats can conclude; with fewer the comparison says "inconclusive".
COMPARE_CONFIDENCE = 0.90
# A relative effect smaller than this is no practical difference, whatever its interval.
PRACTICAL_EFFECT = 0.05

MEDIAN = "median, order statistics"
SHIFT = "Hodges-Lehmann shift, Mann-Whitney exact"
RATIO = "Hodges-Lehmann ratio on logs, Mann-Whitney exact"

HIGHER, LOWER, UNCHANGED, INCONCLUSIVE = "higher", "lower", "unchanged", "inconclusive"
VERDICTS = (HIGHER, LOWER, UNCHANGED, INCONCLUSIVE)



def number(value: object) -> float | None:
    """A stored figure as a float, or None where there is none: missing (None, NaN as Spark and pandas hold it),
    infinite, a flag (a bool is a verdict, not a figure) or not a number at all. One rule for every reader of rows."""
    if value is None or isinstance(value, bool):
        return None
    try:
        figure = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return figure if math.isfinite(figure) else None

@dataclass(frozen=True)
class Metric:
    """A figure compared between arms or runs (the findings', the comparison's, the upgrade's): its column or row
    name, its words and unit, and which way is better. One type: each reader's metrics differ, what one is does not."""

    name: str
    label: str  # in words, for the report
    unit: str
    higher_is_better: bool
    absolute_threshold: float | None = None  # for figures that can be 0: the practical difference in `unit`


@dataclass(frozen=True)
class Interval:
    """An estimate with an interval of true coverage `level` (0 and NaN bounds: no interval, e.g. one repeat)."""

    estimate: float
    low: float
    high: float
    n: int
    level: float = 0.0
    method: str = MEDIAN

    @property
    def has_interval(self) -> bool:
        return self.level > 0 and math.isfinite(self.low) and math.isfinite(self.high)

    def reaches(self, confidence: float) -> bool:
        """The interval's true coverage is at least `confidence` (what a claim at that level needs)."""
        return self.has_interval and self.level >= confidence - 1e-9

    def describe(self, fmt: str = "{:.4g}") -> str:
        """`12,345 [12,000, 12,700] (75 %, n = 3)`, or `12,345 (n = 1, no interval)`."""
        text = fmt.format(self.estimate)
        if not self.has_interval:
            return f"{text} (n = {self.n}, no interval)"
        return f"{text} [{fmt.format(self.low)}, {fmt.format(self.high)}] ({level_text(self.level)}, n = {self.n})"

    def __str__(self) -> str:
        return self.describe()


def level_text(level: float) -> str:
    """A coverage as people read it: 75 %, 93.75 %, 90 %."""
    pct = level * 100
    return f"{pct:.0f} %" if abs(pct - round(pct)) < 0.05 else f"{pct:.4g} %"


def _clean(values: Sequence[float]) -> list[float]:
    return sorted(float(v) for v in values if v is not None and math.isfinite(float(v)))


def _check(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _median(sorted_values: Sequence[float]) -> float:
    n = len(sorted_values)
    mid = n // 2
    return sorted_values[mid] if n % 2 else (sorted_values[mid - 1] + sorted_values[mid]) / 2


def order_statistic_level(n: int, k: int) -> float:
    """Coverage of [x_(k), x_(n+1-k)] for the median of a continuous distribution: 1 - 2 P(Bin(n, 1/2) < k)."""
    if not 1 <= k <= n // 2:
        raise ValueError(f"k must be in 1..{n // 2} for n = {n}, got {k}")
    below = sum(math.comb(n, i) for i in range(k)) / 2 ** n
    return 1 - 2 * below


def median_interval(values: Sequence[float], confidence: float = INTERVAL_CONFIDENCE) -> Interval:
    """The median of the finite values and the narrowest order-statistic interval whose coverage reaches
    `confidence`; when even [min, max] falls short (n <= 5 at 95 %), [min, max] with its true, lower level."""
    _check(confidence)
    data = _clean(values)
    n = len(data)
    if n == 0:
        raise ValueError("an interval needs at least one finite value")
    estimate = _median(data)
    if n == 1:
        return Interval(estimate, math.nan, math.nan, 1, 0.0)
    k = 1
    while k + 1 <= n // 2 and order_statistic_level(n, k + 1) >= confidence - 1e-12:
        k += 1
    return Interval(estimate, data[k - 1], data[n - k], n, order_statistic_level(n, k))


@lru_cache(maxsize=256)
def mann_whitney_counts(m: int, n: int) -> tuple[int, ...]:
    """How many of the C(m+n, m) equally likely arrangements give each value u = 0 .. m*n of the Mann-Whitney
    statistic (pairs with the second sample's value above the first's) when both samples come from one
    continuous distribution."""
    if m == 0 or n == 0:
        return (1,)
    # Where the largest of all m+n values sits: in the second sample (it beats all m of the first) or in the first.
    with_top_in_second = mann_whitney_counts(m, n - 1)
    with_top_in_first = mann_whitney_counts(m - 1, n)
    counts = [0] * (m * n + 1)
    for u, c in enumerate(with_top_in_second):
        counts[u + m] += c
    for u, c in enumerate(with_top_in_first):
        counts[u] += c
    return tuple(counts)


def shift_level(m: int, n: int, k: int) -> float:
    """Coverage of [d_(k), d_(mn+1-k)] over the sorted m*n pairwise differences: 1 - 2 P(U < k)."""
    counts = mann_whitney_counts(m, n)
    return 1 - 2 * sum(counts[:k]) / math.comb(m + n, m)


def shift_interval(base: Sequence[float], other: Sequence[float], confidence: float = COMPARE_CONFIDENCE,
                   relative: bool = True) -> Interval:
    """How `other` differs from `base`: the Hodges-Lehmann estimate of the shift with the exact Mann-Whitney
    interval, the narrowest whose coverage reaches `confidence` (else the widest, with its true level).

    `relative`: on log values, reported as a relative change (0.10 = 10 % higher than base); needs positive
    values. `n` is the smaller sample's size (both are in `method`'s caller's hands: Effect keeps them)."""
    _check(confidence)
    a, b = _clean(base), _clean(other)
    if not a or not b:
        raise ValueError("a comparison needs at least one finite value on each side")
    if relative:
        if min(a[0], b[0]) <= 0:
            raise ValueError("a relative comparison needs positive values")
        a, b = [math.log(x) for x in a], [math.log(x) for x in b]
    diffs = sorted(y - x for x in a for y in b)
    m, n = len(a), len(b)
    estimate = _median(diffs)
    k = 1  # the widest interval first; narrower ones while their coverage still reaches the level asked for
    while k + 1 <= m * n // 2 and shift_level(m, n, k + 1) >= confidence - 1e-12:
        k += 1
    level = max(shift_level(m, n, k), 0.0)
    low, high = (diffs[k - 1], diffs[m * n - k]) if level > 0 else (math.nan, math.nan)  # 1 vs 1: no interval
    if relative:
        estimate, low, high = (math.expm1(x) if math.isfinite(x) else x for x in (estimate, low, high))
    return Interval(estimate, low, high, min(m, n), level, RATIO if relative else SHIFT)


@dataclass(frozen=True)
class Effect:
    """A variant against its baseline: the relative change of one metric with its interval and verdict."""

    interval: Interval  # relative change, other vs base (0.1 = +10 %)
    n_base: int
    n_other: int
    confidence: float  # the level the verdict was asked at
    threshold: float  # the practical difference

    @property
    def verdict(self) -> str:
        return effect_verdict(self.interval, self.confidence, self.threshold)

    def describe(self) -> str:
        """`+12 % [+3 %, +20 %] (90 %, n = 3 vs 3): higher`."""
        return f"{effect_text(self.interval, self.n_base, self.n_other)}: {self.verdict}"


def effect_text(interval: Interval, n_base: int, n_other: int) -> str:
    """A relative effect as people read it, from its figures (an Effect's, or a table row's that stored them):
    `+12 % [+3 %, +20 %] (90 %, n = 3 vs 3)`."""
    head = f"{interval.estimate:+.0%}".replace("%", " %")
    if interval.has_interval:
        head += f" [{interval.low:+.0%}, {interval.high:+.0%}]".replace("%", " %") + f" ({level_text(interval.level)}"
    else:
        head += " (no interval"
    within = f", {WITHIN_RUN}" if interval.method in WITHIN_RUN_METHODS else ""
    return f"{head}, n = {n_base} vs {n_other}{within})"


def effect_verdict(interval: Interval, confidence: float = COMPARE_CONFIDENCE,
                   threshold: float = PRACTICAL_EFFECT) -> str:
    """higher / lower: the interval, at the level asked for, lies on one side of no change and the estimate is
    at least the practical threshold away from it; unchanged: the whole interval lies within the threshold;
    inconclusive: anything else, and always when the repeats cannot give an interval of the level asked for."""
    if not interval.reaches(confidence):
        return INCONCLUSIVE
    if interval.low > 0 and interval.estimate >= threshold:
        return HIGHER
    if interval.high < 0 and interval.estimate <= -threshold:
        return LOWER
    if -threshold <= interval.low and interval.high <= threshold:
        return UNCHANGED
    return INCONCLUSIVE


def compare(base: Sequence[float], other: Sequence[float], confidence: float = COMPARE_CONFIDENCE,
            threshold: float = PRACTICAL_EFFECT) -> Effect:
    """`other` against `base` as a relative effect (positive values: rates, latencies, costs)."""
    interval = shift_interval(base, other, confidence, relative=True)
    return Effect(interval, len(_clean(base)), len(_clean(other)), confidence, threshold)


# ------------------------------------------------------------------------------------ within one run

# Five windows: few enough that each is long against the seconds' autocorrelation (20 windows of a 240 s phase
# cover 81 % at AR(1) phi 0.8 where 5 cover 89 %, nominal 90 %); the t quantile with 4 df pays for the few.
WITHIN_RUN_BATCHES = 5
# Below 180 steady seconds (36 s windows) the windows' means stay correlated at phi 0.8 (120 s: 87 % for a nominal
# 90 %): no interval. The seeds' phases hold 240 (disks-matter-2020) and 270 (flow-control-2020).
WITHIN_RUN_MIN_SECONDS = 180
WITHIN_RUN = "within one run; run-to-run variation not measured"
BATCH_MEAN = "mean of one run's seconds, batch means, t"
BATCH_RATIO = "ratio of two runs' means, batch means, Welch t on logs"
SECTIONED = "percentile of one run, sectioning over its windows, t"
SECTIONED_RATIO = "ratio of two runs' percentiles, sectioning, Welch t on logs"
WITHIN_RUN_METHODS = (BATCH_MEAN, BATCH_RATIO, SECTIONED, SECTIONED_RATIO)


@dataclass(frozen=True)
class BatchMeans:
    """One run's per-second series as batch means: the mean over `batches` windows of a per-window figure (the
    window's mean rate, or its variation), the standard error of that mean from the windows' spread, and the
    seconds it is over."""

    mean: float
    se: float
    batches: int
    seconds: int

    @property
    def rse(self) -> float:
        """The standard error relative to the mean (what a phase's rate carries to the findings)."""
        return self.se / abs(self.mean) if self.mean else math.inf


def batch_means(values: Sequence[float], batches: int = WITHIN_RUN_BATCHES,
                min_seconds: int = WITHIN_RUN_MIN_SECONDS) -> BatchMeans | None:
    """A run's per-second values (in time order) as `batches` non-overlapping windows of equal length, the first
    seconds left over dropped (nearest the warm-up); None below `min_seconds` finite values."""
    found = _windows(values, batches, min_seconds)
    if found is None:
        return None
    windows, seconds = found
    return _over_windows([sum(w) / len(w) for w in windows], seconds)


def batch_variation(values: Sequence[float], batches: int = WITHIN_RUN_BATCHES,
                    min_seconds: int = WITHIN_RUN_MIN_SECONDS) -> BatchMeans | None:
    """How choppy a run's per-second rate is (seed 000: "throughput was more choppy" on the HDD): the coefficient of
    variation of the seconds within each of batch_means' windows, as the mean over the windows with its standard
    error from their spread. The figure is the within-window CV (windows of seconds / `batches`), not the whole
    run's, so a slow drift does not count as chop, and windows nearly independent give the interval as for a mean;
    None where batch_means has none, or a window's mean is not positive."""
    found = _windows(values, batches, min_seconds)
    if found is None or any(sum(w) <= 0 for w in found[0]):
        return None
    windows, seconds = found
    return _over_windows([_cv(w) for w in windows], seconds)


def _cv(window: Sequence[float]) -> float:
    mean = sum(window) / len(window)
    return math.sqrt(sum((v - mean) ** 2 for v in window) / (len(window) - 1)) / mean


def window_layout(seconds: int, batches: int = WITHIN_RUN_BATCHES,
                  min_seconds: int = WITHIN_RUN_MIN_SECONDS) -> tuple[int, int] | None:
    """How `seconds` steady seconds in time order are cut into `batches` equal windows: (how many of the first are
    dropped, nearest the warm-up; each window's length); None below `min_seconds`. One rule for the rates' windows
    (batch_means) and the percentiles' (the client fold's window histograms)."""
    if seconds < max(min_seconds, 2 * batches):
        return None
    size = seconds // batches
    return seconds - size * batches, size


def _windows(values: Sequence[float], batches: int, min_seconds: int) -> tuple[list[list[float]], int] | None:
    """The finite values as `batches` equal windows in time order (window_layout), and how many finite values
    there were; None below `min_seconds` of them."""
    data = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    layout = window_layout(len(data), batches, min_seconds)
    if layout is None:
        return None
    dropped, size = layout
    return [data[dropped + i * size:dropped + (i + 1) * size] for i in range(batches)], len(data)


def _over_windows(figures: Sequence[float], seconds: int) -> BatchMeans:
    grand = sum(figures) / len(figures)
    variance = sum((f - grand) ** 2 for f in figures) / (len(figures) - 1)
    return BatchMeans(grand, math.sqrt(variance / len(figures)), len(figures), seconds)


def t_cdf(t: float, df: int) -> float:
    """Student's t distribution function for a whole number of degrees of freedom (closed form: the finite
    series in cos(atan(t / sqrt(df))))."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    theta = math.atan(abs(t) / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2:  # odd: 2/pi (theta + sin cos (1 + 2/3 cos^2 + 2*4/(3*5) cos^4 + ...))
        term, total = 1.0, 1.0 if df > 1 else 0.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        inside = 2 / math.pi * (theta + s * math.cos(theta) * total)
    else:  # even: sin (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ...)
        term, total = 1.0, 1.0
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        inside = s * total
    return 0.5 + math.copysign(inside / 2, t)


@lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    """The t value below which a share `p` of Student's t with `df` degrees of freedom lies (bisection)."""
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if t_cdf(mid, df) < p else (low, mid)
    return (low + high) / 2


def run_mean_interval(estimate: float, rse: float, batches: int, confidence: float = INTERVAL_CONFIDENCE,
                      method: str = BATCH_MEAN) -> Interval:
    """One run's figure (`estimate`: the phase's mean rate, or its percentile) with the t interval of its relative
    standard error `rse` over `batches` windows, at the nominal `confidence` (n = 1: one run): symmetric for a mean,
    on logs for a percentile (SECTIONED: its spread is on logs, and a percentile's error is skewed)."""
    _check(confidence)
    half = t_quantile(0.5 + confidence / 2, batches - 1) * rse
    if method == SECTIONED:
        return Interval(estimate, estimate * math.exp(-half), estimate * math.exp(half), 1, confidence, method)
    return Interval(estimate, estimate - half * abs(estimate), estimate + half * abs(estimate), 1, confidence, method)


def welch_df(rse_base: float, batches_base: int, rse_other: float, batches_other: int) -> int:
    """Welch-Satterthwaite degrees of freedom of a difference of two batch-means estimates, rounded down (the
    conservative side); both spreads 0: the sum."""
    a, b = rse_base ** 2, rse_other ** 2
    da, db = batches_base - 1, batches_other - 1
    if a + b == 0:
        return da + db
    return max(1, math.floor((a + b) ** 2 / (a * a / da + b * b / db)))


def run_ratio_interval(base: float, rse_base: float, batches_base: int, other: float, rse_other: float,
                       batches_other: int, confidence: float = COMPARE_CONFIDENCE, method: str = BATCH_RATIO
                       ) -> Interval:
    """How one run's mean differs from another's (relative: 0.1 = 10 % higher): the log ratio with the Welch t
    interval from the two runs' relative standard errors (on logs, a relative error is the error of the log), at
    the nominal `confidence`."""
    _check(confidence)
    if base <= 0 or other <= 0:
        raise ValueError("a relative comparison needs positive values")
    log_ratio = math.log(other / base)
    half = (t_quantile(0.5 + confidence / 2, welch_df(rse_base, batches_base, rse_other, batches_other))
            * math.hypot(rse_base, rse_other))
    return Interval(math.expm1(log_ratio), math.expm1(log_ratio - half), math.expm1(log_ratio + half), 1,
                    confidence, method)


def run_compare(base: float, rse_base: float, batches_base: int, other: float, rse_other: float,
                batches_other: int, confidence: float = COMPARE_CONFIDENCE,
                threshold: float = PRACTICAL_EFFECT, method: str = BATCH_RATIO) -> Effect:
    """`other` against `base`, one run each, within each run (batch means, or sectioned percentiles): the verdict
    as between repeats."""
    interval = run_ratio_interval(base, rse_base, batches_base, other, rse_other, batches_other, confidence, method)
    return Effect(interval, 1, 1, confidence, threshold)


# A percentile is no mean of seconds: the run's figure is read from its whole merged histogram, and its spread
# from the same percentile of each window's merged histogram, taken around the whole run's figure on logs
# (sectioning: Asmussen and Glynn, Stochastic Simulation, III.5; Nakayama 2014). A window's own percentile is
# biased when the window holds few samples beyond it, so the spread is asked only of windows holding at least
# SECTION_TAIL_MIN; and a percentile leans on the seconds' slow swings harder than a mean does, so its windows must
# be longer: at phi 0.8 and 180 s a nominal 95 % covered 91-92 %, from 240 s within 3 points (tests/test_stats.py).
SECTION_TAIL_MIN = 10
SECTION_MIN_SECONDS = 240


def sectioned_rse(estimate: float, window_figures: Sequence[float], window_samples: Sequence[int],
                  quantile: float) -> float | None:
    """The relative standard error (on logs) of one run's percentile `estimate` (at `quantile`, read from the whole
    run's histogram) from that percentile of each of its windows (`window_figures`, each over `window_samples`
    samples): sqrt(sum((log q_i - log q)^2) / (k - 1) / k). None when a window holds fewer than SECTION_TAIL_MIN
    samples beyond the percentile, a figure is missing or not positive, or there are fewer than two windows."""
    k = len(window_figures)
    figures = [number(f) for f in window_figures]
    if k < 2 or len(window_samples) != k or not estimate or estimate <= 0:
        return None
    if any(f is None or f <= 0 for f in figures) or min(window_samples) * (1 - quantile) < SECTION_TAIL_MIN:
        return None
    variance = sum(math.log(f / estimate) ** 2 for f in figures) / (k - 1)  # type: ignore[operator]
    return math.sqrt(variance / k)
