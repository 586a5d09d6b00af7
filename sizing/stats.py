"""Uncertainty across repeats: percentile-bootstrap confidence intervals (pure, numpy only).

With the handful of repeats a sizing campaign can afford (3 to 5), the bootstrap distribution is
small enough to enumerate exactly, so intervals are exact bootstrap intervals, not Monte Carlo noise.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

EXACT_LIMIT = 100_000  # enumerate all n^n resamples up to this many (n <= 6)


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float
    n: int

    def overlaps(self, other: Interval) -> bool:
        return self.low <= other.high and other.low <= self.high

    def __str__(self) -> str:
        return f"{self.estimate:.4g} [{self.low:.4g}, {self.high:.4g}]"


def _nearest_rank(sorted_values: np.ndarray, q: float) -> float:
    rank = max(1, math.ceil(q * len(sorted_values) - 1e-9))
    return float(sorted_values[rank - 1])


def bootstrap_ci(values: Sequence[float], confidence: float = 0.95, statistic: Callable[[np.ndarray], float] = np.mean,
                 resamples: int = 20_000, seed: int = 0) -> Interval:
    """Percentile bootstrap interval of `statistic` over `values` (exact enumeration for small n)."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("a confidence interval needs at least one value")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    n = data.size
    if n ** n <= EXACT_LIMIT:
        stats = np.array([statistic(data[list(idx)]) for idx in itertools.product(range(n), repeat=n)])
    else:
        rng = np.random.default_rng(seed)
        stats = np.array([statistic(data[rng.integers(0, n, n)]) for _ in range(resamples)])
    stats.sort()
    alpha = (1 - confidence) / 2
    return Interval(float(statistic(data)), _nearest_rank(stats, alpha), _nearest_rank(stats, 1 - alpha), n)


def distinguishable(a: Interval, b: Interval) -> bool:
    """Two configs are told apart only when their intervals do not overlap."""
    return not a.overlaps(b)
