"""Recovery after a fault, from per-second throughput (pure; the analysis and the fault tests use it).

Definitions (seconds are whole seconds since scenario start; rates[s] is the throughput of [s, s+1)):
- fault second f = floor(fault_second): the second in which the fault started.
- baseline = mean rate over the `baseline_window_s` seconds before f ([f - W, f), clipped at 0).
- threshold = (1 - tolerance) * baseline. A second is *degraded* when its rate is below the threshold.
  Rates above the baseline (catch-up bursts after a stall) count as recovered: the system delivers at
  least its pre-fault level.
- recovered_at_s = the first second r >= f that starts `sustain_s` consecutive non-degraded seconds
  (all inside the series). r == f means the fault never dented throughput. None: never recovered.
- unavailability_window_s = degraded seconds in [f, r) (in [f, end) when never recovered). With a
  single dip it equals r - f; with several dips it counts only the degraded seconds.
Time to recover is recovered_at_s - f.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np


def dense_rates(seconds: Iterable[int], values: Iterable[float], length: int | None = None) -> np.ndarray:
    """Per-second totals from (second, value) rows (e.g. one row per worker per second); gaps are 0."""
    s = np.asarray(list(seconds), dtype=np.int64)
    v = np.asarray(list(values), dtype=np.float64)
    if len(s) != len(v):
        raise ValueError("seconds and values differ in length")
    if len(s) and s.min() < 0:
        raise ValueError("seconds must be >= 0")
    n = length if length is not None else (int(s.max()) + 1 if len(s) else 0)
    out = np.zeros(n, dtype=np.float64)
    keep = s < n
    np.add.at(out, s[keep], v[keep])
    return out


def time_to_recover(per_second_rates: Sequence[float] | np.ndarray, fault_second: float,
                    baseline_window_s: int = 30, tolerance: float = 0.05,
                    sustain_s: int = 5) -> tuple[int | None, int]:
    """(recovered_at_s or None, unavailability_window_s); see the module docstring for the definitions."""
    rates = np.asarray(per_second_rates, dtype=np.float64)
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance}")
    if baseline_window_s < 1 or sustain_s < 1:
        raise ValueError("baseline_window_s and sustain_s must be >= 1")
    f = math.floor(fault_second)
    if not 0 < f < len(rates):
        raise ValueError(f"fault second {fault_second} leaves no baseline before it or lies past the series "
                         f"({len(rates)} seconds)")
    baseline = float(rates[max(0, f - baseline_window_s):f].mean())
    if baseline <= 0:
        raise ValueError(f"no throughput in the {baseline_window_s}s before the fault: nothing to recover to")
    ok = rates >= (1.0 - tolerance) * baseline
    after = ok[f:]
    if len(after) >= sustain_s:
        # windows[i]: after[i : i + sustain_s] is all ok
        windows = np.lib.stride_tricks.sliding_window_view(after, sustain_s).all(axis=1)
        hits = np.flatnonzero(windows)
        if len(hits):
            r = f + int(hits[0])
            return r, int((~ok[f:r]).sum())
    return None, int((~after).sum())


def baseline_rate(per_second_rates: Sequence[float] | np.ndarray, fault_second: float,
                  baseline_window_s: int = 30) -> float:
    rates = np.asarray(per_second_rates, dtype=np.float64)
    f = math.floor(fault_second)
    return float(rates[max(0, f - baseline_window_s):f].mean())
