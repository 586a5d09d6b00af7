"""Broker-side metrics: per config and scenario the phase_summary broker_* figures (max over phases and repeats),
per scenario every config's memory against its watermark on one chart (seed 002 Figs 7/8), and the raw broker
samples per config as charts (at most MAX_BROKER_CHARTS)."""

from __future__ import annotations

import pandas as pd

from app.report import charts, fmt
from app.report.context import ReportContext
from app.report.html import table, tag

MAX_BROKER_CHARTS = 24


def render(ctx: ReportContext) -> list[object]:
    """Table: the phase_summary broker_* figures (max over phases and repeats); charts: raw samples."""
    out: list[object] = [tag("h2", "Broker-side metrics", id="broker")]
    summary = ctx.data.phase_summary
    body = []
    for config_id in ctx.config_ids:
        for scenario in ctx.campaign.scenarios:
            rows = summary[(summary["config_id"] == config_id) & (summary["scenario"] == scenario.name)]
            if rows.empty:
                continue
            mem, frac = rows["broker_mem_max_bytes"].max(), rows["broker_mem_max_fraction"].max()
            alarm, down = fmt.any_true(rows["broker_alarm"]), fmt.any_true(rows["broker_node_down_seen"])
            body.append([config_id, scenario.name,
                         f"{mem / 2**20:,.0f} MiB" if pd.notna(mem) else "n/a",
                         f"{frac * 100:,.0f}%" if pd.notna(frac) else "n/a",
                         fmt.rate(rows["broker_queue_max"].max()),
                         ("yes", "bad") if alarm else ("no" if alarm is False else "n/a"),
                         ("yes", "warn") if down else ("no" if down is False else "n/a")])
    if body:
        out.append(table(["config", "scenario", "peak memory (any node)", "peak % of watermark",
                          "peak messages in queues", "memory/disk alarm", "node seen down"], body,
                         numeric=[2, 3, 4]))
    out.extend(memory_figures(ctx))
    figures = []
    for config_id in ctx.config_ids:
        for (cid, scenario, run_id), broker in sorted(ctx.data.broker_series.items()):
            if cid != config_id or broker is None or broker.empty or len(figures) >= MAX_BROKER_CHARTS:
                continue
            first = broker["repeat"].min()
            events = fmt.of_repeat(ctx.data.events.get((cid, scenario, run_id)), first)
            figures.append(ctx.fig(charts.broker_panels(fmt.of_repeat(broker, first), events,
                                                        f"Broker metrics: {config_id}, {scenario}"),
                                   f"Broker metrics of {config_id} during {scenario} (run {run_id}, repeat "
                                   f"{first}), sampled from the management API; alarms marked x."))
    if not body and not figures and len(out) == 1:
        return [*out, tag("p", "No broker samples were recorded.", class_="muted")]
    out.extend(figures)
    if len(figures) == MAX_BROKER_CHARTS:
        out.append(tag("p", f"Charts limited to the first {MAX_BROKER_CHARTS}.", class_="note"))
    return out


def memory_share(broker: pd.DataFrame) -> pd.Series:
    """Per second, the highest share of its memory high watermark any node used (broker_series' mem_share; a node
    without figures, e.g. killed, is left out of that second)."""
    rows = broker.dropna(subset=["mem_share"])
    return rows["mem_share"].astype(float).groupby(rows["second"]).max().sort_index()


def memory_figures(ctx: ReportContext) -> list[object]:
    """One chart per scenario with every config's memory share (first repeat of its run), where two or more
    configs ran it: the per-config charts below are capped, this comparison is not (one per scenario)."""
    out: list[object] = []
    for scenario in dict.fromkeys(s.name for s in ctx.campaign.scenarios):
        series: dict[str, pd.Series] = {}
        for config_id in ctx.config_ids:
            runs = [b for (cid, name, _), b in sorted(ctx.data.broker_series.items())
                    if cid == config_id and name == scenario and b is not None and not b.empty]
            if runs:
                share = memory_share(fmt.of_repeat(runs[0], runs[0]["repeat"].min()))
                if len(share):
                    series[config_id] = share
        if len(series) > 1:
            title = f"{scenario}: memory against the high watermark, every config"
            out.append(ctx.fig(charts.memory_share_by_config(series, ctx.colors, title),
                               f"{title} (seed 002 Figs 7/8): per second, the node nearest its memory high "
                               "watermark, as a share of it (broker samples, first repeat); at 100 % the memory "
                               "alarm blocks publishers."))
    return out
