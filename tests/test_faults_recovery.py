import numpy as np
import pytest

from sizing.criteria.recovery import baseline_rate, dense_rates, time_to_recover


def series(*parts: tuple[float, int]) -> list[float]:
    return [value for value, n in parts for _ in range(n)]


def test_dip_then_recovery():
    rates = series((1000, 40), (0, 6), (500, 2), (1000, 30))  # fault at 40, degraded 40..47, back at 48
    assert time_to_recover(rates, 40.3) == (48, 8)


def test_recovers_immediately_when_throughput_never_dips():
    rates = series((1000, 40), (990, 30))  # 1% below baseline: within the 5% tolerance
    assert time_to_recover(rates, 40) == (40, 0)


def test_never_recovers_counts_every_degraded_second():
    rates = series((1000, 40), (0, 10), (900, 20))  # 900 < 950: still degraded at the end
    assert time_to_recover(rates, 40) == (None, 30)


def test_catch_up_burst_above_baseline_counts_as_recovered():
    rates = series((1000, 40), (0, 5), (1800, 3), (1000, 20))
    assert time_to_recover(rates, 40) == (45, 5)


def test_single_good_second_inside_a_dip_is_not_a_recovery():
    rates = series((1000, 40), (0, 3), (1000, 1), (0, 3), (1000, 20))
    recovered, window = time_to_recover(rates, 40)
    assert recovered == 47
    assert window == 6  # the lone good second is not counted as unavailable


def test_tolerance_and_sustain_are_honoured():
    rates = series((1000, 40), (930, 20))
    assert time_to_recover(rates, 40, tolerance=0.05) == (None, 20)
    assert time_to_recover(rates, 40, tolerance=0.10) == (40, 0)
    short_tail = series((1000, 40), (0, 5), (1000, 3))
    assert time_to_recover(short_tail, 40, sustain_s=5) == (None, 5)
    assert time_to_recover(short_tail, 40, sustain_s=3) == (45, 5)


def test_baseline_window_only_looks_before_the_fault():
    rates = series((5000, 20), (1000, 20), (0, 2), (1000, 10))
    assert baseline_rate(rates, 40, baseline_window_s=10) == 1000
    assert time_to_recover(rates, 40, baseline_window_s=10) == (42, 2)
    # With a 40 s window the baseline is 3000 msg/s and 1000 msg/s never gets back to it.
    assert time_to_recover(rates, 40, baseline_window_s=40) == (None, 12)


def test_errors_on_unusable_input():
    with pytest.raises(ValueError, match="no throughput"):
        time_to_recover([0.0] * 20, 10)
    with pytest.raises(ValueError, match="no baseline"):
        time_to_recover([1.0] * 20, 0)
    with pytest.raises(ValueError, match="tolerance"):
        time_to_recover([1.0] * 20, 10, tolerance=1.5)


def test_dense_rates_sums_workers_and_fills_gaps():
    out = dense_rates([0, 0, 1, 3, 3], [10, 5, 7, 1, 2])
    assert np.array_equal(out, np.array([15.0, 7.0, 0.0, 3.0]))
    assert np.array_equal(dense_rates([0, 5], [1, 1], length=3), np.array([1.0, 0.0, 0.0]))
