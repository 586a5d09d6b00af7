"""How a fault hurt throughput and how long it took to come back, over one phase's per-second series.

Time to recover and the unavailability window come from `sizing.criteria.recovery.time_to_recover` (the one
definition the fault tests and the report use too): baseline = mean throughput over the 30 s before the
fault second; a second is degraded below 95 % of it (catch-up bursts above it count as recovered);
recovered at the first second that starts 5 consecutive non-degraded seconds; unavailability = degraded
seconds between the fault and recovery (or the end of the series when it never recovers).
This module adds the worst dip (lowest 5 s mean after the fault / baseline) and adapts the Spark side's
(seconds, rates) rows, in which a missing second counts as zero throughput.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sizing.criteria.recovery import baseline_rate, dense_rates, time_to_recover

BASELINE_WINDOW_S = 30
SUSTAIN_S = 5
TOLERANCE = 0.05


@dataclass(frozen=True)
class FaultImpact:
    pre_fault_rate: float | None
    time_to_recover_s: float | None
    unavailable_s: float
    worst_dip_ratio: float | None


def fault_impact(seconds: np.ndarray, rate: np.ndarray, fault_s: float) -> FaultImpact:
    seconds = np.asarray(seconds, dtype=np.int64)
    if seconds.size == 0:
        return FaultImpact(None, None, 0.0, None)
    first = int(seconds.min())
    rates = dense_rates(seconds - first, np.asarray(rate, dtype=np.float64))
    fault = fault_s - first
    try:
        recovered_at, unavailable = time_to_recover(rates, fault, BASELINE_WINDOW_S, TOLERANCE, SUSTAIN_S)
    except ValueError:  # no baseline before the fault (it hit the phase's first second, or nothing flowed)
        return FaultImpact(None, None, 0.0, None)
    level = baseline_rate(rates, fault, BASELINE_WINDOW_S)
    f = math.floor(fault)
    after = rates[f:]
    hold = min(SUSTAIN_S, after.size)
    means = np.convolve(after, np.ones(hold) / hold, mode="valid") if hold else np.array([])
    return FaultImpact(level, None if recovered_at is None else float(recovered_at - f), float(unavailable),
                       float(means.min() / level) if means.size else None)
