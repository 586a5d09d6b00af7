"""Capacity search (issue 16): per search scenario the `capacity` table's answer per config and repeat, each search
as it ran (phase_summary's probe rows) and its rate-vs-p99 curve with the knee."""

from __future__ import annotations

import pandas as pd

from app.report import charts, fmt
from app.report.context import ReportContext
from app.report.html import table, tag
from sizing.criteria.stats import level_text


def render(ctx: ReportContext) -> list[object]:
    """Per search: the capacity table's answer per config and repeat, the search as it ran and the rate-vs-p99
    curve with the knee. Figures come from the capacity table and phase_summary's probe rows, never recomputed."""
    if not ctx.searches:
        return []
    out: list[object] = [tag("h2", "Capacity search", id="search")]
    capacity = ctx.data.capacity if ctx.data.capacity is not None else pd.DataFrame()
    summary = ctx.data.phase_summary
    for scenario in ctx.searches:
        spec = scenario.search
        assert spec is not None
        out.append(tag("h3", f"Scenario {scenario.name}"))
        out.append(tag("p", f"Ladder from {fmt.rate(spec.start_rate)} msg/s (x{spec.growth:g}, at most "
                            f"{fmt.rate(spec.upper_rate)}), then bisection to "
                            + (f"{spec.resolution:.0%}" if spec.resolution_relative else
                               f"{fmt.rate(spec.resolution)} msg/s")
                            + f"; each probe {spec.warmup_s:g} s warm-up + {spec.measure_s:g} s measured; SLO p99 "
                              f"{fmt.ms(spec.slo_p99_ms)}; at most {spec.worst_case_probes()} probes.",
                       class_="muted"))
        rows = capacity[capacity["scenario"] == scenario.name] if not capacity.empty else capacity
        if rows.empty:
            out.append(tag("p", "No capacity table rows for this search yet.", class_="muted"))
            continue
        body = []
        for r in rows.sort_values(["config_id", "run_id", "repeat"]).itertuples(index=False):
            interval = (f"{fmt.rate(r.sustainable_median)} (n = {int(r.repeats)}, no interval)"
                        if pd.isna(r.sustainable_ci_low) else
                        f"{fmt.rate(r.sustainable_median)} [{fmt.rate(r.sustainable_ci_low)}, "
                        f"{fmt.rate(r.sustainable_ci_high)}] ({level_text(r.sustainable_ci_level)}, "
                        f"n = {int(r.repeats)})")
            body.append([r.config_id, f"{r.run_id} #{int(r.repeat)}", r.status, fmt.rate(r.sustainable_rate),
                         f"{fmt.rate(r.last_pass)} .. {fmt.rate(r.first_fail)}",
                         f"{int(r.probes_used)} / {int(r.worst_case_probes)}"
                         + (f" (+{int(r.inconclusive_attempts)} re-run)" if r.inconclusive_attempts else ""),
                         fmt.ms(r.p99_at_sustainable_ms),
                         r.bottleneck_at_sustainable or "n/a", interval,
                         ("yes", "ok") if r.verdicts_agree else ("no", "bad")])
        out.append(table(["config", "run", "status", "sustainable msg/s", "bracket", "probes / worst case",
                          "p99 there", "bottleneck there", "median [interval, coverage] over repeats",
                          "online = recomputed"], body, numeric=[3, 5, 6]))
        for r in rows.sort_values(["config_id", "run_id", "repeat"]).itertuples(index=False):
            probes = summary[(summary["config_id"] == r.config_id) & (summary["scenario"] == scenario.name)
                             & (summary["run_id"] == r.run_id) & (summary["repeat"] == r.repeat)]
            if probes.empty:
                continue
            name = f"{scenario.name} on {r.config_id} (run {r.run_id}, repeat {int(r.repeat)})"
            out.append(ctx.fig(charts.search_progress(probes, f"Search {name}"),
                               f"Search {name}: each probe's rate when it started (o pass, x fail; letter: "
                               "ladder / bisect / confirm) and the bracket held after it narrowing to "
                               f"{fmt.rate(r.last_pass)} .. {fmt.rate(r.first_fail)} msg/s."))
            bracket = (float(r.last_pass), float(r.first_fail)) if not (
                pd.isna(r.last_pass) or pd.isna(r.first_fail)) else None
            knee = None if pd.isna(r.sustainable_rate) else float(r.sustainable_rate)
            out.append(ctx.fig(charts.rate_vs_p99(probes, spec.slo_p99_ms, knee, bracket, f"p99 vs rate {name}"),
                               f"End-to-end p99 against probe rate, {name}: the knee is the sustainable rate "
                               f"{fmt.rate(knee)} msg/s (capacity table)."))
    return out
