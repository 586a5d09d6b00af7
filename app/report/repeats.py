"""Repeated trials -> figures with intervals of stated coverage (pure: pandas + sizing.stats).

A campaign with `repeats: N` has N phase_summary rows per (config, scenario, phase) and N capacity_repeats
rows per config (the leaderboards step's per-repeat figures). The report shows each figure as the median over
repeats with its exact order-statistic interval (sizing.stats.median_interval: 75 % for three repeats, stated
next to it), and says of two adjacent configs of a leaderboard whether the repeats tell them apart (an exact
two-sample comparison, sizing.stats.compare), cannot (its interval includes no difference), or are too few to say.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sizing.stats import (
    COMPARE_CONFIDENCE,
    HIGHER,
    INCONCLUSIVE,
    INTERVAL_CONFIDENCE,
    LOWER,
    Effect,
    Interval,
    compare,
    level_text,
    median_interval,
)

GROUP = ["config_id", "scenario", "phase"]
DEFAULT_METRICS = ("confirm_rate", "consume_rate", "e2e_p50_ms", "e2e_p75_ms", "e2e_p95_ms", "e2e_p99_ms",
                   "e2e_p999_ms", "backlog_max", "time_to_recover_s", "worst_dip_ratio")


def finite(values: Sequence[float]) -> list[float]:
    return [float(v) for v in values if v is not None and not pd.isna(v) and math.isfinite(float(v))]


def interval_of(values: Sequence[float], confidence: float = INTERVAL_CONFIDENCE) -> Interval | None:
    """The median of the finite values with its order-statistic interval; None when there are none."""
    kept = finite(values)
    return median_interval(kept, confidence) if kept else None


def summarize_repeats(rows: pd.DataFrame, metrics: Sequence[str] = DEFAULT_METRICS,
                      confidence: float = INTERVAL_CONFIDENCE) -> pd.DataFrame:
    """One row per (config_id, scenario, phase) with, for every metric M present: M (median over repeats),
    M_low, M_high (its order-statistic interval; NaN with one repeat), `n` (repeats seen) and `level` (the
    interval's true coverage for n repeats). Also carries phase_name, target_rate and `valid` = every repeat
    valid."""
    present = [m for m in metrics if m in rows.columns]
    out = []
    for (config_id, scenario, phase), group in rows.groupby(GROUP, sort=True):
        n = int(group["repeat"].nunique()) if "repeat" in group else len(group)
        record: dict[str, object] = {"config_id": config_id, "scenario": scenario, "phase": int(phase),
                                     "phase_name": group["phase_name"].iloc[0] if "phase_name" in group else "",
                                     "target_rate": float(group["target_rate"].iloc[0]) if "target_rate" in group
                                     else math.nan, "n": n,
                                     "level": median_interval(range(n), confidence).level if n else 0.0}
        if "valid" in group:
            record["valid"] = bool(group["valid"].fillna(True).astype(bool).all())
        for metric in present:
            interval = interval_of(group[metric].tolist(), confidence)
            record[metric] = interval.estimate if interval else math.nan
            record[f"{metric}_low"] = interval.low if interval else math.nan
            record[f"{metric}_high"] = interval.high if interval else math.nan
        out.append(record)
    return pd.DataFrame(out)


def config_values(per_repeat: pd.DataFrame, column: str,
                  transform: Callable[[str, np.ndarray], Sequence[float]] | None = None) -> dict[str, list[float]]:
    """Each config's finite values of `column` over its repeats (optionally transformed per config first, e.g.
    into cost per 1000 msg/s: transform(config_id, values) -> values)."""
    out = {}
    for config_id, group in per_repeat.groupby("config_id", sort=True):
        values = np.asarray(group[column], dtype=float)
        if transform is not None:
            values = np.asarray(transform(str(config_id), values), dtype=float)
        kept = finite(values.tolist())
        if kept:
            out[str(config_id)] = kept
    return out


def config_intervals(values: dict[str, list[float]], confidence: float = INTERVAL_CONFIDENCE) -> dict[str, Interval]:
    return {config_id: median_interval(v, confidence) for config_id, v in values.items()}


@dataclass(frozen=True)
class AdjacentNote:
    rank: int  # rank of the upper row of the pair
    config_id: str
    next_config_id: str
    effect: Effect  # the upper row's figure against the next row's (its baseline)

    @property
    def distinguishable(self) -> bool:
        return self.effect.verdict in (HIGHER, LOWER)

    def text(self) -> str:
        e, i = self.effect, self.effect.interval
        counts = f"n = {e.n_other} vs {e.n_base}"
        if e.verdict == INCONCLUSIVE and not i.reaches(e.confidence):
            return (f"too few repeats to tell from #{self.rank + 1} ({counts}: at most {level_text(i.level)}, "
                    f"{level_text(e.confidence)} needed)")
        if self.distinguishable:
            return f"ahead of #{self.rank + 1}: {e.describe().rsplit(':', 1)[0]}"
        return f"not distinguishable from #{self.rank + 1} {self.next_config_id} ({e.describe().rsplit(':', 1)[0]})"


def annotate_adjacent(ranked_config_ids: Sequence[str], values: dict[str, list[float]],
                      confidence: float = COMPARE_CONFIDENCE) -> list[AdjacentNote]:
    """For each adjacent pair of a ranked leaderboard, the upper config's repeats against the next one's
    (sizing.stats.compare, relative). Pairs where either config has a single repeat (or none) are left out:
    no claim either way."""
    notes = []
    for rank, (upper, lower) in enumerate(itertools.pairwise(ranked_config_ids), start=1):
        a, b = values.get(upper, []), values.get(lower, [])
        if len(a) < 2 or len(b) < 2 or min(a + b) <= 0:
            continue
        notes.append(AdjacentNote(rank, upper, lower, compare(b, a, confidence)))
    return notes


def format_interval(estimate: float, low: float, high: float, n: int, fmt: str = "{:,.0f}") -> str:
    """`12,345 [12,000, 12,700]` when there is an interval, `12,345` otherwise, `n/a` for NaN."""
    if estimate is None or not math.isfinite(estimate):
        return "n/a"
    text = fmt.format(estimate)
    if n > 1 and low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        # no-break space inside the brackets: a narrow cell wraps before the interval, never inside it
        text += f" [{fmt.format(low)},\u00a0{fmt.format(high)}]"
    return text


def interval_note(n: int, confidence: float = INTERVAL_CONFIDENCE) -> str:
    """What a bracket means for `n` repeats, in words, with its true coverage."""
    if n < 2:
        return "One repeat: no interval."
    level = median_interval(range(n), confidence).level
    return (f"Values are medians over {n} repeats (each on a fresh cluster); brackets are exact order-statistic "
            f"intervals for the median, which cover it {level_text(level)} of the time with {n} repeats "
            f"(whatever the distribution; more repeats narrow them and raise the level to "
            f"{level_text(confidence)}).")
