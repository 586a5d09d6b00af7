"""Adverse scenarios (seeds 000/002): per scenario its faults and criterion, the `adverse` table's judgement per
config (no row: "not judged", never a guess), each phase's figures over repeats and the per-second charts."""

from __future__ import annotations

import pandas as pd

from app.report import charts, fmt, repeats
from app.report.context import ReportContext
from app.report.html import table, tag
from sizing.campaign import Scenario
from sizing.criteria.rules import (
    BACKLOG_ADVERSE,
    DRAINED_BACKLOG_S,
    MATCH_FRACTION,
    REDUCED_PUBLISH_WINDOW_S,
    scenario_kind,
)

MAX_ADVERSE_PANELS = 8  # configs per adverse chart (two columns of four)


def is_backlog(scenario: Scenario) -> bool:
    return scenario_kind(scenario) == BACKLOG_ADVERSE


def criterion_text(scenario: Scenario, target_rate: float) -> str:
    """The scenario's criterion in words; every threshold it words is read from sizing.criteria.rules
    (sizing.judgement.adverse)."""
    share = f"{MATCH_FRACTION * 100:g} %"
    if is_backlog(scenario):
        tolerance = (f"at most {scenario.publish_tolerance_s:g} s of" if scenario.publish_tolerance_s else "no")
        return ("Criterion (seed 002): publishing continues unaffected while the backlog absorbs the difference. "
                f"Holds with {tolerance} reduced publish rate (a second whose {REDUCED_PUBLISH_WINDOW_S:g} s confirm "
                f"rate fell below {share} of the offered rate), nothing confirmed lost, and the backlog drained (back "
                f"under {DRAINED_BACKLOG_S:g} s of the final offered rate) before the end. Peak backlog, memory "
                "against the high watermark and seconds of publishers blocked by an alarm are reported; end-to-end "
                "latency is reported, not judged: messages wait in a backlog by design.")
    where = (f"phases offered at most the {target_rate:,.0f} msg/s target" if scenario.step_rates is not None
             and scenario.publish_rate is None else "every phase")
    return (f"Criterion (seeds 000/002): {where} match their target rate (confirm and consume rates at least {share} "
            "of it) within the SLO and lose no confirmed message; the time to recover from each fault is reported.")


def render(ctx: ReportContext) -> list[object]:
    out: list[object] = [tag("h2", "Adverse scenarios", id="adverse")]
    if not ctx.adverse:
        return [*out, tag("p", "This campaign has no adverse scenario.", class_="muted")]
    if ctx.without_intervals:
        out.append(tag("p", repeats.UNAVAILABLE, class_="warn"))
    for scenario in ctx.adverse:
        out.append(tag("h3", f"Scenario {scenario.name}"))
        faults = ", ".join(f"{f.kind}" + (f" (heal after {f.heal_after_s:g} s)" if f.heal_after_s else "")
                           for f in scenario.faults)
        intro = (scenario.description + " " if scenario.description else "") + (
            f"Faults: {faults}." if faults else "No injected fault (load/processing profile).")
        out.append(tag("p", intro, class_="muted"))
        out.append(tag("p", criterion_text(scenario, ctx.campaign.target.rate), class_="note"))
        out.extend(verdict_table(ctx, scenario))
        rows = ctx.summary_ci[ctx.summary_ci["scenario"] == scenario.name]
        body = []
        for config_id in ctx.config_ids:
            for r in rows[rows["config_id"] == config_id].itertuples(index=False):
                s = pd.Series(r._asdict())
                src = ctx.summary
                src = src[(src["config_id"] == config_id) & (src["scenario"] == scenario.name) &
                          (src["phase"] == r.phase)]
                matched = fmt.all_true(src["matched_target"])
                body.append([config_id, r.phase_name, fmt.rate(r.target_rate),
                             fmt.interval(s, "confirm_rate", "{:,.0f}", ctx.with_ci),
                             fmt.interval(s, "consume_rate", "{:,.0f}", ctx.with_ci),
                             fmt.interval(s, "e2e_p99_ms", "{:,.0f} ms", ctx.with_ci),
                             fmt.interval(s, "backlog_max", "{:,.0f}", ctx.with_ci),
                             fmt.interval(s, "time_to_recover_s", "{:,.1f} s", ctx.with_ci),
                             f"{int(src['lost'].fillna(0).sum())}/{int(src['duplicates'].fillna(0).sum())}",
                             ("yes", "ok") if matched else ("no", "warn" if is_backlog(scenario) else "bad")])
        out.append(table(["config", "phase", "target", "publish rate", "consume rate", "p99", "max backlog",
                          "time to recover", "lost/dup", "rate and SLO matched"], body,
                         numeric=[2, 3, 4, 5, 6, 7, 8]))
        out.extend(per_second_charts(ctx, scenario))
    return out


def verdict_table(ctx: ReportContext, scenario: Scenario) -> list[object]:
    """The `adverse` table's rows of one scenario, the figures its criterion reads first."""
    verdict = (ctx.data.adverse[ctx.data.adverse["scenario"] == scenario.name]
               if ctx.data.adverse is not None else pd.DataFrame())
    if verdict.empty:
        return [tag("p", "Not judged: the adverse table has no row for this scenario (its analysis has not run "
                         "or wrote nothing).", class_="warn")]
    body = []
    for r in verdict.sort_values("config_id").itertuples(index=False):
        # a null held: too few conclusive phases (sizing.judgement.adverse.judge); the reason names the invalid ones
        held = (("not judged", "warn") if r.held is None or pd.isna(r.held) else
                ("held", "ok") if r.held else ("not held", "bad"))
        reason = r.reason if isinstance(r.reason, str) else "—"
        if is_backlog(scenario):
            reduced = f"{fmt.secs(r.reduced_publish_s)} (tolerance {fmt.secs(r.publish_tolerance_s)})"
            body.append([r.config_id, held, reduced, fmt.secs(r.publishers_blocked_s), fmt.count(r.peak_backlog_msgs),
                         fmt.pct(r.peak_memory_share),
                         f"yes, {fmt.secs(r.drain_s)} after the peak" if r.drained else ("no", "bad"),
                         fmt.count(r.lost), fmt.ms(r.max_e2e_p99_ms), reason])
        else:
            down = r.nodes_down if isinstance(r.nodes_down, str) else "none"
            body.append([r.config_id, held, f"{fmt.count(r.phases_held)}/{fmt.count(r.phases_judged)}",
                         fmt.secs(r.max_time_to_recover_s), fmt.dip(r.worst_dip_ratio), fmt.secs(r.unavailable_s),
                         fmt.count(r.lost), fmt.ms(r.max_e2e_p99_ms), down, fmt.secs(r.max_whole_after_heal_s),
                         reason])
    if is_backlog(scenario):
        headers = ["config", "verdict", "reduced publish rate", "publishers blocked", "peak backlog",
                   "peak memory (of watermark)", "drained", "lost", "worst p99 (reported)", "why"]
        numeric = [3, 4, 5, 7, 8]
    else:
        headers = ["config", "verdict", "phases held", "longest recovery", "worst dip", "unavailable", "lost",
                   "worst p99", "nodes seen down (broker)", "whole again after the heal", "why"]
        numeric = [2, 3, 4, 5, 6, 7, 9]
    return [table(headers, body, numeric=numeric)]


def per_second_charts(ctx: ReportContext, scenario: Scenario) -> list[object]:
    """Seed 002's per-second charts: one panel per config (first run and repeat of each)."""
    runs = []
    for config_id in ctx.config_ids:
        found = sorted(k for k, v in ctx.data.client_series.items()
                       if k[0] == config_id and ctx.family_phases.get(k[1], (k[1],))[0] == scenario.name
                       and v is not None and not v.empty)
        if not found:
            continue
        key = found[0]
        client = ctx.data.client_series[key]
        first = client["repeat"].min()
        runs.append((config_id, fmt.of_repeat(client, first), fmt.of_repeat(ctx.data.events.get(key), first),
                     fmt.of_repeat(ctx.data.broker_series.get(key), first)))
    figures = []
    for start in range(0, len(runs), MAX_ADVERSE_PANELS):
        part = runs[start:start + MAX_ADVERSE_PANELS]
        title = f"{scenario.name}: publish, consume and backlog per second" + (
            f" ({part[0][0]} … {part[-1][0]})" if len(runs) > len(part) else "")
        figures.append(ctx.fig(charts.adverse_panels(part, title, ctx.colors),
                               f"{title}, one panel per config (first repeat; axes shared): offered rate "
                               "dashed, publish (confirmed) blue, consume orange, backlog shaded (right axis); "
                               "red line = fault injected, green dashed = healed."))
    return figures
