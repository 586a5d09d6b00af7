"""A metric across every stored run of a campaign (issue 24: `sizing trend` and the report's trend chart), with
change points. Pure: the runs' table rows in, points and change points out.

Each run's point is the median of its repeats with its order-statistic interval (sizing.judgement.comparison: the
figures `sizing compare` compares). Runs are ordered by when their load started (the `runs` table), else by run id.

Change points: Pettitt's rank test (Pettitt 1979, Applied Statistics 28:126) with an exact permutation p-value,
applied by binary segmentation, on the runs' medians. Why this one:
- it is rank-based, like the rest of the platform's statistics (sizing/criteria/stats.py): no normality, a lognormal
  latency or a capped throughput is as good as a normal one, and a single wild run moves it by one rank only;
- its p-value here is exact (every ordering of the series for up to EXACT_MAX_RUNS runs, else a seeded Monte Carlo
  of MONTE_CARLO permutations), so its false-alarm rate is what it says (tests/test_trends.py measures it), not an
  asymptotic approximation that is wrong for the dozen runs a campaign has;
- it works on the run medians, one value per run, so run-to-run drift (another day, another host) counts as noise,
  not the repeats' smaller spread within one run (which would flag every other run);
- the E-divisive method of Apache Otava (Hunter) is a permutation test of the same kind on a multivariate energy
  statistic; it needs longer series for the same power.
A split is flagged when its p-value is at most ALPHA (1 - sizing.criteria.stats.COMPARE_CONFIDENCE: the same 90 % as
`sizing compare`) and the medians on its two sides differ by at least the practical threshold (5 %). Pettitt's most
extreme ordering (every low value before every high one) of n values has probability 2 / C(n, n/2) or so: 10 % or less
only from 6 runs on (computed, `min_runs()`), so a shorter series is shown without change points, and says so.
A change at the very last run (one value on its side) cannot be told from an outlier by any test: compare that run
with the one before (`sizing compare`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from sizing.campaign import Campaign
from sizing.criteria.stats import COMPARE_CONFIDENCE, PRACTICAL_EFFECT
from sizing.judgement.comparison import RunTables, repeat_values, run_value

ALPHA = 1 - COMPARE_CONFIDENCE
EXACT_MAX_RUNS = 8  # 8! = 40,320 orderings: exact; longer series: Monte Carlo
MONTE_CARLO = 20_000


@dataclass(frozen=True)
class Point:
    run_id: str
    started_at: float | None
    value: float
    low: float | None
    high: float | None
    level: float
    n: int
    recommended: str | None = None  # what the run recommended (sizing.judgement.comparison.RunTables.recommended)


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first run after the change (points[index])
    run_id: str
    before: float  # median of the segment's runs before it
    after: float
    relative_change: float
    p_value: float


def _midranks(values: Sequence[float]) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(1, len(x) + 1)
    for value in np.unique(x):  # ties share their mean rank
        tied = x == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def pettitt_statistics(ranks: np.ndarray) -> np.ndarray:
    """|U_t| for every split t = 1 .. n-1 of each row of `ranks` (U_t = sum over i <= t, j > t of sign(x_i - x_j)
    = 2 * (sum of the first t ranks) - t (n + 1), midranks for ties)."""
    ranks = np.atleast_2d(ranks)
    n = ranks.shape[1]
    t = np.arange(1, n)
    return np.abs(2 * np.cumsum(ranks, axis=1)[:, :-1] - t * (n + 1))


@lru_cache(maxsize=16)
def _all_orderings(n: int) -> np.ndarray:
    return np.array(list(itertools.permutations(range(n))), dtype=np.int16)


@lru_cache(maxsize=16)
def _exact_null(n: int) -> np.ndarray:
    """Sorted largest |U_t| of every ordering of the ranks 1..n: the null distribution of any series without ties
    (its ranks are one of those orderings), so a p-value is one search instead of n! cumulative sums."""
    return np.sort(pettitt_statistics(np.arange(1.0, n + 1)[_all_orderings(n)]).max(axis=1))


@lru_cache(maxsize=16)
def _shuffles(n: int, seed: int) -> np.ndarray:
    """MONTE_CARLO seeded orderings of n positions: shuffling the ranks through them draws exactly what
    `rng.permutation(ranks)` would, once per length instead of once per series."""
    rng = np.random.default_rng(seed)
    return np.array([rng.permutation(n) for _ in range(MONTE_CARLO)], dtype=np.int16)


def pettitt(values: Sequence[float], seed: int = 2020) -> tuple[int, float]:
    """The most likely change (index of the first value after it) and its permutation p-value: the share of the
    values' orderings whose largest |U_t| is at least the observed one (all orderings up to EXACT_MAX_RUNS values;
    beyond, MONTE_CARLO random ones and the observed, seeded)."""
    ranks = _midranks(values)
    n = len(ranks)
    if n < 2:
        return 0, 1.0
    observed = pettitt_statistics(ranks)[0]
    split = int(np.argmax(observed)) + 1
    k = observed.max() - 1e-9
    if n <= EXACT_MAX_RUNS:
        if len(np.unique(ranks)) == n:
            null = _exact_null(n)
            return split, float((len(null) - np.searchsorted(null, k)) / len(null))
        return split, float(np.mean(pettitt_statistics(ranks[_all_orderings(n)]).max(axis=1) >= k))
    extreme = int(np.sum(pettitt_statistics(ranks[_shuffles(n, seed)]).max(axis=1) >= k))
    return split, (extreme + 1) / (MONTE_CARLO + 1)


@lru_cache(maxsize=4)
def min_runs(alpha: float = ALPHA) -> int:
    """The shortest series on which Pettitt's exact test can reach `alpha` at all (its most extreme ordering)."""
    for n in range(2, EXACT_MAX_RUNS + 1):
        if pettitt(list(range(n)))[1] <= alpha + 1e-12:
            return n
    return EXACT_MAX_RUNS + 1


def change_points(values: Sequence[float], alpha: float = ALPHA, threshold: float = PRACTICAL_EFFECT,
                  offset: int = 0) -> list[tuple[int, float]]:
    """Binary segmentation: (index, p-value) of every flagged change, in order (module docstring)."""
    if len(values) < min_runs(alpha):
        return []
    split, p_value = pettitt(values)
    before, after = float(np.median(values[:split])), float(np.median(values[split:]))
    if p_value > alpha + 1e-12 or before <= 0 or abs(after / before - 1) < threshold:
        return []
    return [*change_points(values[:split], alpha, threshold, offset), (offset + split, p_value),
            *change_points(values[split:], alpha, threshold, offset + split)]


@dataclass(frozen=True)
class Trend:
    campaign: str
    config_id: str
    scenario: str
    metric: str
    points: list[Point]
    changes: list[ChangePoint]
    min_runs: int

    @property
    def long_enough(self) -> bool:
        return len(self.points) >= self.min_runs

    def to_dict(self) -> dict[str, Any]:
        return {"campaign": self.campaign, "config_id": self.config_id, "scenario": self.scenario,
                "metric": self.metric, "min_runs": self.min_runs, "long_enough": self.long_enough,
                "method": "Pettitt rank test, exact permutation p-value, binary segmentation",
                "alpha": ALPHA, "points": [p.__dict__ for p in self.points],
                "change_points": [c.__dict__ for c in self.changes]}


def run_order(record: Mapping[str, Any] | None, run_id: str) -> tuple[float, str]:
    started = (record or {}).get("started_at")
    started = float(started) if started is not None and math.isfinite(float(started)) else math.inf
    return started, run_id


def trend(campaign: Campaign, runs: Sequence[RunTables], config_id: str, metric: str,
          scenario: str | None = None, alpha: float = ALPHA, threshold: float = PRACTICAL_EFFECT) -> Trend:
    """`metric` of `config_id` (in `scenario`, or the one scenario the metric has) over `runs`, oldest first."""
    ordered = sorted(runs, key=lambda r: run_order(r.run, r.run_id))
    per_run = [(r, repeat_values(campaign, r)) for r in ordered]
    scenarios = sorted({k[1] for _, values in per_run for k in values if k[0] == config_id and k[2] == metric})
    if scenario is None:
        if len(scenarios) > 1:
            raise ValueError(f"{metric} of {config_id} is measured in several scenarios ({', '.join(scenarios)}): "
                             "name one")
        scenario = scenarios[0] if scenarios else ""
    points = []
    for tables, values in per_run:
        repeats = values.get((config_id, scenario, metric))
        if repeats:
            figure = run_value(list(repeats.values()))
            started = (tables.run or {}).get("started_at")
            points.append(Point(tables.run_id, float(started) if started is not None else None, figure["value"],
                                figure["low"], figure["high"], figure["level"], figure["n"], tables.recommended))
    values = [p.value for p in points]
    found = change_points(values, alpha, threshold)
    bounds = [0, *(index for index, _ in found), len(values)]
    changes = []
    for k, (index, p_value) in enumerate(found, start=1):
        before = float(np.median(values[bounds[k - 1]:index]))
        after = float(np.median(values[index:bounds[k + 1]]))
        changes.append(ChangePoint(index, points[index].run_id, before, after, after / before - 1, p_value))
    return Trend(campaign.name, config_id, scenario, metric, points, changes, min_runs(alpha))
