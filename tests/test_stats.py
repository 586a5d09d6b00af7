"""Bootstrap intervals: exact known answers on tiny samples, sane behaviour on larger ones."""

from __future__ import annotations

import numpy as np
import pytest

from sizing.stats import Interval, bootstrap_ci, distinguishable


def test_exact_bootstrap_of_three_values() -> None:
    # The 27 resamples of [1, 2, 3] have means 1, 4/3, ..., 3 with weights 1, 3, 6, 7, 6, 3, 1.
    ci95 = bootstrap_ci([1, 2, 3], confidence=0.95)
    assert (ci95.estimate, ci95.low, ci95.high, ci95.n) == (2.0, 1.0, 3.0, 3)
    ci80 = bootstrap_ci([1, 2, 3], confidence=0.80)
    assert ci80.low == pytest.approx(4 / 3) and ci80.high == pytest.approx(8 / 3)


def test_constant_repeats_give_a_zero_width_interval() -> None:
    ci = bootstrap_ci([41_000.0] * 3)
    assert ci.low == ci.high == ci.estimate == 41_000.0


def test_large_sample_matches_the_normal_approximation() -> None:
    values = np.random.default_rng(3).normal(100.0, 10.0, size=400)
    ci = bootstrap_ci(values, resamples=4000, seed=1)
    half_width = 1.96 * values.std(ddof=1) / np.sqrt(values.size)
    assert (ci.high - ci.low) / 2 == pytest.approx(half_width, rel=0.15)
    assert ci.low < values.mean() < ci.high


def test_distinguishable_only_without_overlap() -> None:
    assert distinguishable(Interval(10, 9, 11, 3), Interval(20, 19, 21, 3))
    assert not distinguishable(Interval(10, 9, 15, 3), Interval(14, 13, 16, 3))


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one value"):
        bootstrap_ci([])
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci([1.0], confidence=1.5)
