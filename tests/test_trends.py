"""`sizing trend`'s change points (sizing.judgement.trends, pure): Pettitt's exact permutation p-value against a
brute-force enumeration of every ordering (an independent implementation of the statistic: the pairwise sign sums), the
shortest series it can flag anything on, a known step found, and its false-alarm rate measured on 1,000 simulated
series without a change (at most the stated 10 %)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from sizing.campaign import load_campaign
from sizing.judgement.comparison import RunTables
from sizing.judgement.trends import ALPHA, change_points, min_runs, pettitt, trend

SERIES = 1_000
CAMPAIGN = load_campaign(Path(__file__).resolve().parent.parent / "campaigns" / "local-quick.yaml")


def brute_force_p(values: list[float]) -> float:
    def k(x):
        n = len(x)
        return max(abs(sum(np.sign(x[i] - x[j]) for i in range(t) for j in range(t, n))) for t in range(1, n))

    observed = k(values)
    orderings = list(itertools.permutations(values))
    return sum(k(list(o)) >= observed - 1e-9 for o in orderings) / len(orderings)


@pytest.mark.parametrize("values", [[3.0, 1.0, 2.0, 5.0, 4.0], [1.0, 2.0, 3.0, 10.0, 11.0, 12.0],
                                    [5.0, 5.0, 1.0, 7.0, 2.0, 9.0]])
def test_the_exact_p_value_equals_a_brute_force_enumeration(values) -> None:
    assert pettitt(values)[1] == pytest.approx(brute_force_p(values))


def test_a_series_needs_six_runs_before_anything_can_be_flagged() -> None:
    assert min_runs() == 6 and pytest.approx(0.10) == ALPHA
    assert change_points([100.0, 100.0, 100.0, 50.0, 50.0]) == []  # halved, but 5 runs cannot reach 10 %
    assert change_points([100.0, 101.0, 99.0, 50.0, 51.0, 49.0]) == [(3, pytest.approx(0.1))]


def test_a_step_is_found_where_it_is_and_small_steps_are_not_flagged() -> None:
    rng = np.random.default_rng(5)
    values = [*rng.normal(1000, 10, 7), *rng.normal(900, 10, 5)]
    [(index, p_value)] = change_points(values)
    assert index == 7 and p_value < 0.01
    assert change_points([v * (0.98 if i >= 7 else 1.0) for i, v in enumerate(rng.normal(1000, 1, 12))]) == []


def test_the_trend_of_a_metric_over_stored_runs() -> None:
    config = "n1-c5.2xlarge-gp2"
    runs = []
    for i, top in enumerate([1500.0, 1510.0, 1490.0, 1505.0, 1300.0, 1290.0, 1310.0]):
        runs.append(RunTables(f"r{i}", {"run_id": f"r{i}", "started_at": 1000.0 * i},
                              capacity_repeats=[{"config_id": config, "repeat": r, "top_matched_throughput": top + r}
                                                for r in (1, 2, 3)],
                              recommendation=[{"config_id": config, "recommended": i < 4}] if i else ()))
    series = trend(CAMPAIGN, runs[::-1], config, "top_throughput")
    assert [p.run_id for p in series.points] == [f"r{i}" for i in range(7)]  # by start, whatever the input order
    assert series.points[0].n == 3 and series.points[0].level == pytest.approx(0.75)
    # each point names what its run recommended (its recommendation table; r0 has none)
    assert [p.recommended for p in series.points] == [None, config, config, config, "none", "none", "none"]
    [change] = series.changes
    assert change.run_id == "r4" and change.relative_change < -0.1 and series.long_enough


def test_the_false_alarm_rate_on_series_without_a_change_is_at_most_the_stated_rate() -> None:
    rng = np.random.default_rng(24)
    flagged = 0
    for _ in range(SERIES):
        values = list(rng.lognormal(math.log(1000.0), 0.05, int(rng.integers(6, 13))))
        flagged += bool(change_points(values, threshold=0.0))  # no practical threshold: the test's own rate
    rate = flagged / SERIES
    print(f"{SERIES} series of 6-12 runs without a change: change points flagged in {rate:.3f}, stated at most "
          f"{ALPHA:.2f}")
    assert rate <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / SERIES)
