"""Repeated trials -> figures with intervals of stated coverage (pure: plain rows in, rows out; schemas
sizing.contract.records REPEAT_INTERVALS and BOARD_INTERVALS, written by the leaderboards step, read by the report).

A campaign with `repeats: N` has N phase_summary rows per (config, scenario, phase) and N capacity_repeats rows per
config. Each figure is the median over repeats with its exact order-statistic interval
(sizing.criteria.stats.median_interval: 75 % for three repeats, its true coverage stored beside it):
- `phase_intervals`: per (config, scenario, phase) and metric of REPEAT_METRICS (phase_summary's rows);
- `board_intervals`: per leaderboard board (BOARDS) and config, over its capacity_repeats rows (priced per
  1000 msg/s for the cost board), and whether the repeats tell each config apart from the next-ranked one: an
  exact two-sample comparison (sizing.criteria.stats.compare), or none when either has fewer than two repeats.
`board_entries` is the one ranking of the boards (the report shows it, the comparisons follow it).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sizing.campaign import as_family_row
from sizing.contract.records import LATENCY_QUANTILES
from sizing.criteria import rules
from sizing.criteria.stats import COMPARE_CONFIDENCE, INTERVAL_CONFIDENCE, Interval, compare, median_interval, number
from sizing.resources.cost import cost_per_1000_msgs

# The phase_summary figures shown over repeats (the report's per-phase tables and charts, client-setting steps).
REPEAT_METRICS = ("confirm_rate", "publish_rate", "consume_rate", *(f"e2e_{q}_ms" for q in LATENCY_QUANTILES),
                  "backlog_max", "time_to_recover_s", "worst_dip_ratio")
PHASE_KEY = ("config_id", "scenario", "phase")


def finite(values: Iterable[Any]) -> list[float]:
    """The values that are numbers (None and NaN, as Spark rows and pandas hold a missing figure, left out)."""
    out = []
    for value in values:
        if value is not None and math.isfinite(number := float(value)):
            out.append(number)
    return out


def interval_columns(interval: Interval | None, prefix: str = "value") -> dict[str, Any]:
    """An interval as table columns: `value`, `value_low`, `value_high` (null without an interval: one repeat),
    `value_level` (its true coverage; 0 without one). None (no figure at all): every column null, level 0."""
    with_interval = interval is not None and interval.has_interval
    return {prefix: interval.estimate if interval is not None else None,
            f"{prefix}_low": interval.low if with_interval else None,
            f"{prefix}_high": interval.high if with_interval else None,
            f"{prefix}_level": interval.level if interval is not None else 0.0}


def phase_intervals(rows: Iterable[Mapping[str, Any]], metrics: Sequence[str] = REPEAT_METRICS,
                    confidence: float = INTERVAL_CONFIDENCE, *,
                    phases: Mapping[str, tuple[str, int | None]] | None = None) -> list[dict[str, Any]]:
    """One row per (config_id, scenario, phase) of phase_summary's `rows` and metric: the median over the group's
    repeats with its interval (interval_columns), `n` (finite values it is over; 0: none, the figure is null),
    `repeats` (the group's repeats), `valid` (every repeat conclusive: sizing.criteria.rules.conclusive_row; the figures
    keep every repeat, flagged by this), and the
    group's phase_name and target_rate. With `phases` (sizing.campaign.family_phases of the campaign's scenarios), an
    isolated scenario's runs are the phases of the scenario as written, as the report shows them. Sorted by the
    key, then metric in `metrics` order."""
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for row in rows:
        row = as_family_row(row, phases) if phases is not None else row
        groups.setdefault(tuple(row[k] for k in PHASE_KEY), []).append(row)
    out = []
    for key in sorted(groups):
        group = groups[key]
        first = group[0]
        shared = {**dict(zip(PHASE_KEY, key, strict=True)), "phase_name": first.get("phase_name"),
                  "target_rate": first.get("target_rate"), "repeats": len({r.get("repeat") for r in group}),
                  "valid": all(rules.conclusive_row(r) for r in group)}
        for metric in metrics:
            values = finite(r.get(metric) for r in group)
            interval = median_interval(values, confidence) if values else None
            out.append({**shared, "metric": metric, "n": len(values), **interval_columns(interval)})
    return out


# --------------------------------------------------------------------------------------------- leaderboards

BOARD_TOP_MATCHED = "top_matched_throughput"  # highest rate carried within the SLO (seed: "top throughput")
BOARD_MATCHED_TARGET = "max_matched_target_rate"  # highest intensity whose target was matched
BOARD_COST_AT_TOP = "cost_at_top"  # cost per 1000 msg/s per month at the top matched throughput
BOARD_COST_AT_TARGET = "cost_at_target"  # ... at the campaign target (configs that met target and SLO)


@dataclass(frozen=True)
class Board:
    name: str
    value: str  # the leaderboards column it shows
    rank: str | None  # the leaderboards column it is ranked by (None: by value, highest first)
    rate: str | None  # the leaderboards column of the rate the value is at (None: the campaign target)
    per_repeat: str | None  # the capacity_repeats column its value aggregates (None: no spread over repeats)
    priced: bool = False  # per_repeat's figures priced per 1000 msg/s per month (sizing.resources.cost) first


BOARDS = (
    Board(BOARD_TOP_MATCHED, "top_matched_throughput", "capacity_rank", "top_matched_throughput",
          "top_matched_throughput"),
    Board(BOARD_MATCHED_TARGET, "max_matched_target_rate", None, "max_matched_target_rate", "max_matched_target_rate"),
    Board(BOARD_COST_AT_TOP, "cost_per_1k_at_top", "rank_at_top", "top_matched_throughput", "top_matched_throughput",
          priced=True),
    # cost at target is the monthly cost over the target: no trial-to-trial spread
    Board(BOARD_COST_AT_TARGET, "cost_per_1k_at_target", "rank_at_target", None, None),
)
BOARD = {b.name: b for b in BOARDS}


def board_entries(leaderboard: Iterable[Mapping[str, Any]], target_rate: float) -> list[dict[str, Any]]:
    """The leaderboards rows (one per config, wide) as board entries: board, rank, config_id, value, rate,
    monthly_cost; each board keeps the leaderboards step's ranks (the highest-intensity board is ranked by value,
    highest first, then config); configs without a figure on a board are left off it. Sorted by board, rank."""
    rows = list(leaderboard)
    out = []
    for board in BOARDS:
        shown = [r for r in rows if number(r.get(board.value)) is not None]
        if board.rank is None:
            shown.sort(key=lambda r: (-number(r[board.value]), r["config_id"]))
            ranked = list(enumerate(shown, start=1))
        else:
            ranked = [(int(number(r[board.rank])), r) for r in shown if number(r.get(board.rank)) is not None]
        for rank, r in ranked:
            out.append({"board": board.name, "rank": rank, "config_id": r["config_id"],
                        "value": number(r[board.value]),
                        "rate": number(r.get(board.rate)) if board.rate else float(target_rate),
                        "monthly_cost": number(r.get("monthly_cost"))})
    return sorted(out, key=lambda e: (e["board"], e["rank"]))


def board_values(board: Board, per_repeat: Iterable[Mapping[str, Any]],
                 monthly: Mapping[str, float]) -> dict[str, list[float]]:
    """Each config's figures of a board over its repeats (capacity_repeats rows; priced with the config's
    monthly cost for a priced board, over the repeats that carried something)."""
    out: dict[str, list[float]] = {}
    if board.per_repeat is None:
        return out
    for row in per_repeat:
        value = number(row.get(board.per_repeat))
        if value is None or (board.priced and value <= 0):
            continue
        config_id = str(row["config_id"])
        out.setdefault(config_id, []).append(cost_per_1000_msgs(monthly[config_id], value) if board.priced
                                             else value)
    return out


NO_COMPARISON: dict[str, Any] = {"next_config_id": None, "n_next": None, "effect": None, "effect_low": None,
                                 "effect_high": None, "effect_level": None, "verdict": None}


def board_intervals(entries: Sequence[Mapping[str, Any]], per_repeat: Sequence[Mapping[str, Any]],
                    monthly: Mapping[str, float], confidence: float = INTERVAL_CONFIDENCE,
                    compare_confidence: float = COMPARE_CONFIDENCE) -> list[dict[str, Any]]:
    """Per board with a spread over repeats and config on it (board_entries), in rank order: the median of the
    config's figures over its repeats with its interval (interval_columns, `n` repeats), and its figures against
    the next-ranked config's (sizing.criteria.stats.compare, relative: effect > 0 = this config's figure is higher), at
    `compare_confidence`; no comparison (NO_COMPARISON) for the last config, or when either side has fewer than two
    repeats or a figure <= 0: no claim either way."""
    out = []
    for board in BOARDS:
        values = board_values(board, per_repeat, monthly)
        if not values:
            continue
        ranked = [e for e in sorted(entries, key=lambda e: e["rank"]) if e["board"] == board.name]
        for entry, below in itertools.zip_longest(ranked, ranked[1:]):
            mine = values.get(entry["config_id"], [])
            if not mine:
                continue
            interval = median_interval(mine, confidence)
            row = {"board": board.name, "rank": entry["rank"], "config_id": entry["config_id"], "n": interval.n,
                   **interval_columns(interval), **NO_COMPARISON}
            theirs = values.get(below["config_id"], []) if below is not None else []
            if len(mine) >= 2 and len(theirs) >= 2 and min(mine + theirs) > 0:
                effect = compare(theirs, mine, compare_confidence)
                row.update(next_config_id=below["config_id"], n_next=effect.n_base,
                           **interval_columns(effect.interval, "effect"), verdict=effect.verdict)
            out.append(row)
    return out
