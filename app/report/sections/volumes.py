"""At the target: every config's throughput per second in its phase at the campaign target, one chart per volume type
(seed 000 Figs 10/18/25; tables.ReportData.rates_at_target), and the volume types at the target (Figs 26-31): one
cluster shape on each volume type, its phase_summary figures side by side and its end-to-end percentiles second by
second (tables.ReportData.at_target)."""

from __future__ import annotations

from app.report import charts, fmt
from app.report.context import ReportContext
from app.report.html import table, tag
from sizing.contract.records import LATENCY_QUANTILES, quantile_label
from sizing.resources.disks import volume_label


def render(ctx: ReportContext) -> list[object]:
    return [*rates_render(ctx), *volumes_render(ctx)]


def rates_render(ctx: ReportContext) -> list[object]:
    """Per volume type, every config's confirmed publish rate per second in its capacity phase at the target."""
    if not ctx.data.rates_at_target:
        return []
    target = ctx.campaign.target.rate
    out: list[object] = [tag("h2", f"Throughput per second at {fmt.rate(target)} msg/s", id="rates-at-target")]
    by_volume: dict[str, dict] = {}
    for plan in ctx.configs:
        rows = ctx.data.rates_at_target.get(plan.config_id)
        if rows is not None and not rows.empty:
            by_volume.setdefault(volume_label(plan.shape.volume), {})[plan.config_id] = rows
    for volume, series in by_volume.items():
        title = f"Publish rate per second at {fmt.rate(target)} msg/s, every config on {volume}"
        out.append(ctx.fig(charts.throughput_seconds_by_config(series, ctx.colors, target, title),
                           f"{title} (seed 000 Figs 10/18/25): confirmed messages per second summed over the "
                           "workers, in each config's capacity phase at the target (first repeat, warm-up left out)."))
    return out


def volumes_render(ctx: ReportContext) -> list[object]:
    """One cluster shape (the top of the throughput board) on each volume type at the campaign target: its
    phase_summary figures side by side, and its end-to-end percentiles second by second."""
    if not ctx.data.at_target:
        return []
    ids = list(ctx.data.at_target)
    volumes = {p.config_id: volume_label(p.shape.volume) for p in ctx.configs}
    target = ctx.campaign.target.rate
    out: list[object] = [tag("h2", "Volume types at the target", id="volumes")]
    rows = ctx.summary[ctx.summary["config_id"].isin(ids) & (ctx.summary["target_rate"] == target)
                       & ctx.summary["scenario"].isin([s.name for s in ctx.intensity])]
    body = []
    for config_id in ids:
        mine = rows[rows["config_id"] == config_id].sort_values("repeat")
        if mine.empty:
            continue
        r = mine.iloc[0]
        body.append([config_id, volumes.get(config_id, ""), fmt.rate(r["confirm_rate"]),
                     *[fmt.ms(r[f"e2e_{q}_ms"]) for q in LATENCY_QUANTILES]])
    out.append(table(["config", "volume", "publish rate", *map(quantile_label, LATENCY_QUANTILES)], body,
                     numeric=[2, 3, 4, 5, 6, 7]))
    title = f"End-to-end latency per second at {fmt.rate(target)} msg/s, one cluster on each volume type"
    out.append(ctx.fig(charts.latency_seconds_by_volume(ctx.data.at_target, volumes, ctx.colors, title),
                       f"{title} (seed 000 Figs 26-31): p50 and p75 (left), p95, p99 and p99.9 (right) of each "
                       "second, all workers' histograms of that second merged; the table gives the phase's own "
                       "percentiles (phase_summary, first repeat)."))
    return out
