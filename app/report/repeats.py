"""Figures over repeats, in words: the report's wording of the leaderboards step's interval tables.

The medians, their order-statistic intervals and coverages (repeat_intervals, board_intervals) and the comparisons of
adjacent configs of a board are computed once, by sizing.judgement.repeats in the leaderboards step; this module only
writes them: a figure with its bracket, what a bracket means for n repeats, and a comparison's verdict as a note.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sizing.criteria.stats import (
    COMPARE_CONFIDENCE,
    HIGHER,
    INCONCLUSIVE,
    INTERVAL_CONFIDENCE,
    LOWER,
    RATIO,
    Interval,
    effect_text,
    level_text,
    number,
)

UNAVAILABLE = ("Figures over repeats are not available for this run: its tables were written before the analysis "
               "wrote repeat_intervals and board_intervals. Rerun the run's analysis to add them (the report shows "
               "the tables' figures and computes none itself).")


def format_interval(estimate: float, low: float, high: float, n: int, fmt: str = "{:,.0f}") -> str:
    """`12,345 [12,000, 12,700]` when there is an interval, `12,345` otherwise, `n/a` for NaN."""
    if estimate is None or not math.isfinite(estimate):
        return "n/a"
    text = fmt.format(estimate)
    if n > 1 and low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        # no-break space inside the brackets: a narrow cell wraps before the interval, never inside it
        text += f" [{fmt.format(low)},\u00a0{fmt.format(high)}]"
    return text


def interval_note(n: int, level: float, confidence: float = INTERVAL_CONFIDENCE) -> str:
    """What a bracket means for `n` repeats, in words, with its true coverage `level` (the table's)."""
    if n < 2:
        return "One repeat: no interval."
    return (f"Values are medians over {n} repeats (each on a fresh cluster); brackets are exact order-statistic "
            f"intervals for the median, which cover it {level_text(level)} of the time with {n} repeats "
            f"(whatever the distribution; more repeats narrow them and raise the level to "
            f"{level_text(confidence)}).")


def _number(value: Any) -> float:
    figure = number(value)
    return math.nan if figure is None else figure


def adjacent_note(row: Mapping[str, Any]) -> str:
    """A board_intervals row's comparison with the next-ranked config, in words ('' without a comparison): ahead of
    it (the repeats tell them apart), not distinguishable (their order may be noise), or too few repeats to say."""
    verdict = row.get("verdict")
    if not isinstance(verdict, str):
        return ""
    n, n_next, following = int(row["n"]), int(row["n_next"]), int(row["rank"]) + 1
    interval = Interval(_number(row["effect"]), _number(row["effect_low"]), _number(row["effect_high"]),
                        min(n, n_next), _number(row["effect_level"]), RATIO)
    if verdict == INCONCLUSIVE and not interval.reaches(COMPARE_CONFIDENCE):
        return (f"too few repeats to tell from #{following} (n = {n} vs {n_next}: at most "
                f"{level_text(interval.level)}, {level_text(COMPARE_CONFIDENCE)} needed)")
    text = effect_text(interval, n_next, n)
    if verdict in (HIGHER, LOWER):
        return f"ahead of #{following}: {text}"
    return f"not distinguishable from #{following} {row['next_config_id']} ({text})"
