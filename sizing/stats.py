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
    return f"{head}, n = {n_base} vs {n_other})"


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
