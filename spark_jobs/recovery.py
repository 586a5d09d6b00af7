"""How a fault hurt throughput and how long it took to come back: one pure function over a per-second series.

The `faults` helper is writing `sizing/recovery.py time_to_recover(...)`; until it lands in main this is the
single function the Spark side calls (`phase_summary.run_dynamics`), so swapping it is a one-line change.

Rules (documented in spark_jobs/README.md):
- pre-fault level: mean throughput over the `baseline_s` seconds before the fault (seconds present in the series);
- recovered at the first second t >= fault start from which `hold_s` consecutive seconds all lie within
  `tolerance` (5 %) of the pre-fault level; time to recover = t - fault start (0 if it never left the band);
  None when it never recovers before the series ends;
- unavailability: seconds between the fault and recovery (or the end) with throughput below 5 % of the level;
- worst dip: the lowest `hold_s`-second mean after the fault, as a fraction of the pre-fault level.
Missing seconds inside the series count as zero throughput (the load generator writes a row every second).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FaultImpact:
    pre_fault_rate: float | None
    time_to_recover_s: float | None
    unavailable_s: float
    worst_dip_ratio: float | None


def fault_impact(seconds: np.ndarray, rate: np.ndarray, fault_s: float, *, baseline_s: float = 60.0,
                 tolerance: float = 0.05, hold_s: int = 5, down_fraction: float = 0.05) -> FaultImpact:
    seconds = np.asarray(seconds, dtype=np.int64)
    rate = np.asarray(rate, dtype=np.float64)
    if seconds.size == 0:
        return FaultImpact(None, None, 0.0, None)
    first, last = int(seconds.min()), int(seconds.max())
    dense = np.zeros(last - first + 1)
    np.add.at(dense, seconds - first, rate)
    start = math.floor(fault_s) - first  # index of the second the fault falls in
    before = dense[max(0, start - int(baseline_s)): max(0, start)]
    if before.size == 0 or before.mean() <= 0:
        return FaultImpact(None, None, 0.0, None)
    level = float(before.mean())
    after = dense[max(0, start):]
    if after.size == 0:
        return FaultImpact(level, None, 0.0, None)
    within = np.abs(after - level) <= tolerance * level
    hold = min(hold_s, after.size)
    # window_ok[i]: seconds i .. i+hold-1 are all within the band
    run = np.convolve(within.astype(np.int64), np.ones(hold, dtype=np.int64), mode="valid")
    ok = np.flatnonzero(run == hold)
    recovered_at = int(ok[0]) if ok.size else None
    horizon = after[: recovered_at] if recovered_at is not None else after
    unavailable = float(np.count_nonzero(horizon < down_fraction * level))
    means = np.convolve(after, np.ones(hold) / hold, mode="valid")
    worst = float(means.min() / level) if means.size else None
    ttr: float | None = None
    if recovered_at is not None:
        recovered_second = first + max(0, start) + recovered_at
        ttr = 0.0 if recovered_at == 0 else max(0.0, recovered_second - fault_s)
    return FaultImpact(level, ttr, unavailable, worst)
