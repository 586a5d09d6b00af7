"""Repeated trials -> figures with confidence intervals (pure: pandas + sizing.stats).

A campaign with `repeats: N` has N phase_summary rows per (config, scenario, phase) and N capacity_repeats
rows per config (the leaderboards step's per-repeat figures). The report shows each figure as the mean over
repeats with an exact percentile-bootstrap interval computed over the numbers it read, and says when two
adjacent configs of a leaderboard cannot be told apart (their intervals overlap).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sizing.stats import Interval, bootstrap_ci, distinguishable

GROUP = ["config_id", "scenario", "phase"]
DEFAULT_METRICS = ("confirm_rate", "consume_rate", "e2e_p50_ms", "e2e_p75_ms", "e2e_p95_ms", "e2e_p99_ms",
                   "e2e_p999_ms", "backlog_max", "time_to_recover_s", "worst_dip_ratio")


def interval_of(values: Sequence[float], confidence: float = 0.95) -> Interval | None:
    """Bootstrap interval of the mean of the finite values; None when there are none."""
    finite = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not finite:
        return None
    return bootstrap_ci(finite, confidence=confidence)


def summarize_repeats(rows: pd.DataFrame, metrics: Sequence[str] = DEFAULT_METRICS,
                      confidence: float = 0.95) -> pd.DataFrame:
    """One row per (config_id, scenario, phase) with, for every metric M present: M (mean over repeats),
    M_low, M_high (bootstrap interval of the mean) and `n` (repeats seen). Also carries phase_name and
    target_rate, and `valid` = every repeat valid."""
    present = [m for m in metrics if m in rows.columns]
    out = []
    for (config_id, scenario, phase), group in rows.groupby(GROUP, sort=True):
        record: dict[str, object] = {"config_id": config_id, "scenario": scenario, "phase": int(phase),
                                     "phase_name": group["phase_name"].iloc[0] if "phase_name" in group else "",
                                     "target_rate": float(group["target_rate"].iloc[0]) if "target_rate" in group
                                     else math.nan,
                                     "n": int(group["repeat"].nunique()) if "repeat" in group else len(group)}
        if "valid" in group:
            record["valid"] = bool(group["valid"].fillna(True).astype(bool).all())
        for metric in present:
            interval = interval_of(group[metric].tolist(), confidence)
            record[metric] = interval.estimate if interval else math.nan
            record[f"{metric}_low"] = interval.low if interval else math.nan
            record[f"{metric}_high"] = interval.high if interval else math.nan
        out.append(record)
    return pd.DataFrame(out)


def config_intervals(per_repeat: pd.DataFrame, column: str, confidence: float = 0.95,
                     transform=None) -> dict[str, Interval]:
    """Interval per config of `column` over its repeats (optionally transformed per config first,
    e.g. into cost per 1000 msg/s: transform(config_id, values) -> values)."""
    intervals = {}
    for config_id, group in per_repeat.groupby("config_id", sort=True):
        values = np.asarray(group[column], dtype=float)
        if transform is not None:
            values = np.asarray(transform(config_id, values), dtype=float)
        interval = interval_of(values.tolist(), confidence)
        if interval is not None:
            intervals[str(config_id)] = interval
    return intervals


@dataclass(frozen=True)
class AdjacentNote:
    rank: int  # rank of the upper row of the pair
    config_id: str
    next_config_id: str
    distinguishable: bool

    def text(self) -> str:
        if self.distinguishable:
            return f"ahead of #{self.rank + 1} (intervals apart)"
        return f"not distinguishable from #{self.rank + 1} {self.next_config_id} (intervals overlap)"


def annotate_adjacent(ranked_config_ids: Sequence[str], intervals: dict[str, Interval]) -> list[AdjacentNote]:
    """For each adjacent pair of a ranked leaderboard, whether their intervals tell them apart.
    Pairs where either config has no interval (or a single repeat) are left out: no claim either way."""
    notes = []
    for rank, (upper, lower) in enumerate(itertools.pairwise(ranked_config_ids), start=1):
        a, b = intervals.get(upper), intervals.get(lower)
        if a is None or b is None or a.n < 2 or b.n < 2:
            continue
        notes.append(AdjacentNote(rank, upper, lower, distinguishable(a, b)))
    return notes


def format_interval(estimate: float, low: float, high: float, n: int, fmt: str = "{:,.0f}") -> str:
    """`12,345 [12,000, 12,700]` when there are repeats, `12,345` otherwise, `n/a` for NaN."""
    if estimate is None or not math.isfinite(estimate):
        return "n/a"
    text = fmt.format(estimate)
    if n > 1 and math.isfinite(low) and math.isfinite(high):
        # no-break space inside the brackets: a narrow cell wraps before the interval, never inside it
        text += f" [{fmt.format(low)},\u00a0{fmt.format(high)}]"
    return text
