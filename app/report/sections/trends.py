"""Across runs (issue 24): each headline metric (history.trend_metrics) over every stored run up to this one, one line
per config with its change points, as sizing.judgement.trends found them (the same function `sizing trend` calls);
nothing here computes a figure. No stored trend: no section."""

from __future__ import annotations

from app.report import charts
from app.report.context import ReportContext
from app.report.html import table, tag
from sizing.judgement.comparison import SUSTAINABLE, TOP_THROUGHPUT, format_value
from sizing.judgement.trends import ALPHA, Trend


def render(ctx: ReportContext) -> list[object]:
    """Each headline metric over the stored runs, one line per config, with change points."""
    history = ctx.history
    if not history.trends:
        return []
    out: list[object] = [tag("h2", "Across runs", id="trends")]
    by_metric: dict[str, list[Trend]] = {}
    for trend in history.trends:
        by_metric.setdefault(trend.metric, []).append(trend)
    for name, trends in by_metric.items():
        label = {TOP_THROUGHPUT.name: TOP_THROUGHPUT.label, SUSTAINABLE.name: SUSTAINABLE.label}.get(name, name)
        runs = max(len(t.points) for t in trends)
        svg = charts.run_trend([(t.config_id, t.points) for t in trends],
                               {t.config_id: [c.run_id for c in t.changes] for t in trends}, ctx.colors,
                               f"{label} across runs", "msg/s (median over repeats)", current_run=ctx.run_id)
        minimum = trends[0].min_runs
        out.append(ctx.fig(svg, f"{label.capitalize()} per run (median of its repeats with the order-statistic "
                                f"interval), oldest first; dashed: a change point (Pettitt rank test, exact "
                                f"permutation p <= {ALPHA:.2f}, shift >= 5 %)."))
        changes = [[t.config_id, t.scenario, c.run_id, format_value(c.before, "msg/s"),
                    format_value(c.after, "msg/s"), f"{c.relative_change:+.1%}", f"{c.p_value:.3f}"]
                   for t in trends for c in t.changes]
        if changes:
            out.append(table(["config", "scenario", "change before run", "median before", "median after", "change",
                              "p"], changes, numeric=[3, 4, 5, 6]))
        elif runs < minimum:
            out.append(tag("p", f"{runs} run(s) stored: change points need at least {minimum} (the shortest series "
                                f"on which the test can reach p <= {ALPHA:.2f}).", class_="note"))
        else:
            out.append(tag("p", "No change point across the stored runs.", class_="note"))
    return out
