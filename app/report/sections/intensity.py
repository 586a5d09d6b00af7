"""Increasing intensity (ideal conditions): per scenario, achieved vs target rate and the latency percentiles per
step (charts in groups of at most MAX_GROUP configs), with a table of every step's rate and p99."""

from __future__ import annotations

import pandas as pd

from app.report import charts, fmt, repeats
from app.report.context import ReportContext
from app.report.html import Raw, esc, table, tag

MAX_GROUP = 7  # configs per latency chart (the seed splits 7 clusters into 4 + 3 for readability)
LATENCY_LOW = ["e2e_p50_ms", "e2e_p75_ms"]
LATENCY_HIGH = ["e2e_p95_ms", "e2e_p99_ms", "e2e_p999_ms"]


def chart_groups(ctx: ReportContext, config_ids: list[str]) -> list[list[str]]:
    """The configs of one chart each: all of them, or at most MAX_GROUP per chart, one volume type per chart."""
    if len(config_ids) <= MAX_GROUP:
        return [config_ids]
    by_volume: dict[str, list[str]] = {}
    for plan in ctx.configs:
        if plan.config_id in config_ids:
            by_volume.setdefault(plan.shape.volume.type, []).append(plan.config_id)
    groups = []
    for ids in by_volume.values():
        groups.extend(ids[i:i + MAX_GROUP] for i in range(0, len(ids), MAX_GROUP))
    return groups


def render(ctx: ReportContext) -> list[object]:
    out: list[object] = [tag("h2", "Increasing intensity (ideal conditions)", id="intensity")]
    if not ctx.intensity:
        return [*out, tag("p", "This campaign has no increasing-intensity scenario.", class_="muted")]
    ci_note = " " + ctx.interval_note() if ctx.with_ci else ""
    slo = ctx.campaign.target.p99_latency_ms
    if ctx.without_intervals:
        out.append(tag("p", repeats.UNAVAILABLE, class_="warn"))
    for scenario in ctx.intensity:
        rows = ctx.summary_ci[ctx.summary_ci["scenario"] == scenario.name]
        out.append(tag("h3", f"Scenario {scenario.name}"))
        if scenario.description:
            out.append(tag("p", scenario.description, class_="muted"))
        present = [c for c in ctx.config_ids if c in set(rows["config_id"])]
        if not present:
            out.append(tag("p", "No figures for this scenario.", class_="muted"))
            continue
        for group in chart_groups(ctx, present):
            label = f" ({group[0]} … {group[-1]})" if len(present) > len(group) else ""
            out.append(ctx.fig(charts.intensity_throughput(
                rows, group, ctx.colors, ctx.campaign.target.rate,
                f"{scenario.name}: achieved vs target publish rate{label}", ctx.with_ci),
                "Achieved (confirmed) publish rate per intensity step, one line and marker per config "
                "(points shifted slightly sideways so that equal rates stay visible); the dashed diagonal is a "
                "perfect match." + ci_note))
        out.append(steps_table(ctx, rows, present))
        for group in chart_groups(ctx, present):
            label = f" ({group[0]} … {group[-1]})" if len(present) > len(group) else ""
            out.append(ctx.fig(charts.latency_panels(rows, group, ctx.colors, LATENCY_LOW, None,
                                                     f"{scenario.name}: p50 and p75 end-to-end latency{label}",
                                                     ctx.with_ci),
                               "End-to-end latency (intended send time to delivery) per intensity." + ci_note))
            out.append(ctx.fig(charts.latency_panels(
                rows, group, ctx.colors, LATENCY_HIGH, slo,
                f"{scenario.name}: p95, p99 and p99.9 end-to-end latency{label}", ctx.with_ci),
                f"Tail latency per intensity; the dotted line is the p99 SLO ({fmt.ms(slo)})." + ci_note))
    return out


def steps_table(ctx: ReportContext, rows: pd.DataFrame, config_ids: list[str]) -> Raw:
    """Configs by intensity step: the achieved rate (with its interval) and p99, coloured by the step's outcome."""
    steps = sorted(rows["target_rate"].unique())
    body = []
    raw = ctx.summary
    for config_id in config_ids:
        cells: list[object] = [config_id]
        for step in steps:
            row = rows[(rows["config_id"] == config_id) & (rows["target_rate"] == step)]
            if row.empty:
                cells.append("—")
                continue
            r = row.iloc[0]
            src = raw[(raw["config_id"] == config_id) & (raw["scenario"] == r["scenario"]) &
                      (raw["phase"] == r["phase"])]
            matched = fmt.all_true(src["matched_target"])
            css = "badbg" if r.get("valid") is False else (
                "okbg" if matched else "warnbg" if matched is False else "")
            cells.append((Raw(f"{esc(fmt.interval(r, 'confirm_rate', '{:,.0f}', ctx.with_ci))}<br>"
                              f"<span class=muted>p99 {esc(fmt.ms(r['e2e_p99_ms']))}</span>"), css))
        body.append(cells)
    headers = ["config \\ target msg/s", *[f"{s:,.0f}" for s in steps]]
    return Raw(str(table(headers, body, numeric=list(range(1, len(steps) + 1))))
               + str(tag("p", "Achieved publish rate, msg/s (with p99 latency) per intensity step. Green: "
                              "matched the target rate within the SLO; amber: missed the rate or the SLO; red: "
                              "phase flagged invalid." + (" " + ctx.interval_note() if ctx.with_ci else ""),
                         class_="note")))
