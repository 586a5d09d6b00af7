"""Leaderboards: the four boards of the `leaderboards` table (with each config's interval over repeats and whether
adjacent configs' repeats tell them apart, as the `board_intervals` table holds them), and the Pareto front."""

from __future__ import annotations

import math

import pandas as pd

from app.report import charts, fmt, repeats
from app.report.context import ReportContext
from app.report.html import Raw, table, tag
from app.report.tables import BOARD_COST_AT_TARGET, BOARD_COST_AT_TOP, BOARD_MATCHED_TARGET, BOARD_TOP_MATCHED, BOARDS


def board_intervals(ctx: ReportContext, board: str) -> dict[str, dict]:
    """Each config's board_intervals row of a board (none without repeats, or when the run's tables lack it)."""
    table = ctx.data.board_intervals
    if not ctx.with_ci or table is None:
        return {}
    return {r["config_id"]: r for r in table[table["board"] == board].to_dict("records")}


def has_interval(row: dict | None) -> bool:
    """The row has an interval to show (more than one repeat)."""
    return row is not None and row["value_level"] > 0 and math.isfinite(row["value_low"] + row["value_high"])


def render(ctx: ReportContext) -> list[object]:
    titles = {BOARD_TOP_MATCHED: ("Top throughput within the SLO", "msg/s", False),
              BOARD_MATCHED_TARGET: ("Highest intensity matched", "target rate matched, msg/s", False),
              BOARD_COST_AT_TOP: ("Cost per 1000 msg/s per month at top throughput", "USD per month", True),
              BOARD_COST_AT_TARGET: (f"Cost per 1000 msg/s per month at the {ctx.campaign.target.rate:,.0f} "
                                     "msg/s target", "USD per month", True)}
    out: list[object] = [tag("h2", "Leaderboards", id="leaderboards")]
    boards = []
    lb = ctx.data.leaderboards
    for board in BOARDS:
        rows = lb[lb["board"] == board].sort_values("rank")
        title, unit, money = titles[board]
        if rows.empty:
            boards.append(tag("div", [tag("h3", title), tag("p", "no entries", class_="muted")], class_="board"))
            continue
        value = "value"
        intervals = board_intervals(ctx, board)
        body = []
        for r in rows.itertuples(index=False):
            interval = intervals.get(r.config_id)
            shown = fmt.money(getattr(r, value)) if money else fmt.rate(getattr(r, value))
            if has_interval(interval):
                figure = fmt.money if money else fmt.rate
                shown += f" [{figure(interval['value_low'])},\u00a0{figure(interval['value_high'])}]"
            extra = f" ({fmt.rate(r.rate)} msg/s)" if money else ""
            note = repeats.adjacent_note(interval) if interval is not None else ""
            body.append([int(r.rank), r.config_id, shown + extra, (note, "muted" if note.startswith("ahead") else
                                                                   "warn")])
        low = high = None
        if intervals:
            low, high = ([intervals[c][end] if c in intervals else math.nan for c in rows["config_id"]]
                         for end in ("value_low", "value_high"))
        svg = charts.leaderboard_bars(rows, value, ctx.colors, title, unit, money, low, high)
        headers = ["#", "config", unit, "vs next" if intervals else ""]
        boards.append(tag("div", [tag("h3", title), ctx.fig(svg, f"Leaderboard: {title}."),
                                  table(headers, body, numeric=[0, 2])], class_="board"))
    out.append(tag("div", boards, class_="boards"))
    if ctx.without_intervals:
        out.append(tag("p", repeats.UNAVAILABLE, class_="warn"))
    if ctx.with_ci:
        out.append(tag("p", ctx.interval_note() + " 'vs next' compares each config's "
                            "repeats with the next one's (exact Mann-Whitney interval of the relative difference, "
                            "90 %): 'not distinguishable' means their order may be noise, 'too few repeats' that "
                            "the repeats cannot give an interval of that level.", class_="note"))
    if ctx.data.pareto is not None and not ctx.data.pareto.empty:
        out += [tag("h3", "Pareto front (cost vs capacity)"), pareto_table(ctx.data.pareto)]
    return out


def pareto_table(pareto: pd.DataFrame) -> Raw:
    """The configs no other config beats on both cost and capacity, cheapest first, formatted like the boards."""
    body = [[r.config_id, r.queue_type, fmt.money(r.monthly_cost), fmt.rate(r.top_matched_throughput),
             fmt.money(r.cost_per_1k_at_top)]
            for r in pareto.sort_values(["monthly_cost", "config_id"]).itertuples(index=False)]
    return Raw(str(table(["config", "queue type", "cluster $/month", "top msg/s in SLO",
                          "$/1000 msg/s/mo at top"], body, numeric=[2, 3, 4]))
               + str(tag("p", "No other config is both cheaper per month and carries more within the SLO.",
                         class_="note")))
