"""Client settings (issue 13; seed 003): per step of a client-setting scenario its setting, rates and latency with
their basis, the run's rates second by second, and per varied setting one chart with a line per queue type."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from app.report import charts, fmt
from app.report.context import ReportContext
from app.report.html import table, tag
from sizing.campaign import Scenario, family_name
from sizing.criteria import rules

SETTING_STEP_METRICS = ("confirm_rate", "publish_rate", "consume_rate", "e2e_p50_ms", "e2e_p95_ms", "e2e_p99_ms")


@dataclass(frozen=True)
class SettingSteps:
    """One varied client setting's steps across scenarios: `points` has one row per (line, step)."""

    points: pd.DataFrame
    step_labels: list[str]  # tick of each step_index: the setting's value (the whole label for a sequence)
    basis: str  # what the e2e figures are measured from: sent | intended (both, joined, if the steps mix them)


def settings_step_points(scenarios: list[Scenario], summary_ci: pd.DataFrame, phase_summary: pd.DataFrame,
                         name_configs: bool) -> dict[str, SettingSteps]:
    """Per varied setting (`steps_dimension`), one line per scenario as written (an isolated scenario's runs are
    its phases) labelled with its queue type, one point per step: the figures over repeats (`summary_ci`:
    tables.phase_interval_view of repeat_intervals, the median of the phase whose name is the step's label) as the
    table holds them, never recomputed; `phase_summary` gives the latency basis."""
    groups: dict[str, list[Scenario]] = {}
    for scenario in scenarios:
        groups.setdefault(scenario.steps_dimension or "sequence", []).append(scenario)
    out: dict[str, SettingSteps] = {}
    for setting, members in groups.items():
        labels = list(dict.fromkeys(s.label for m in members for s in m.step_settings or ()))
        written = {family_name(m): m.workload.queues.type for m in members}
        rows = summary_ci[summary_ci["scenario"].isin(list(written)) & summary_ci["phase_name"].isin(labels)]
        if rows.empty:
            continue
        points = rows[["config_id", "scenario", "phase_name", *SETTING_STEP_METRICS]].copy()
        points["queue_type"] = points["scenario"].map(written)
        points["line"] = points["queue_type"] + " (" + points["scenario"] + ")"
        if name_configs:
            points["line"] += " on " + points["config_id"]
        points["step_index"] = points["phase_name"].map(labels.index)
        raw = phase_summary[phase_summary["scenario"].isin([m.name for m in members])]
        bases = sorted(set(raw["latency_basis"].dropna().astype(str))) if "latency_basis" in raw else []
        ticks = [label.split("=", 1)[1] if setting != "sequence" and "=" in label else label for label in labels]
        out[setting] = SettingSteps(points, ticks, "/".join(bases) or "intended")
    return out


def render(ctx: ReportContext) -> list[object]:
    """Per step of a client-setting scenario: the setting's value, the achieved rates and the latency
    percentiles with their basis (`sent` for max mode: measured from the actual send time, not a schedule)."""
    if not ctx.client_settings:
        return []
    out: list[object] = [tag("h2", "Client settings", id="client-settings")]
    summary = ctx.data.phase_summary
    for scenario in ctx.client_settings:
        out.append(tag("h3", f"Scenario {scenario.name}"))
        if scenario.description:
            out.append(tag("p", scenario.description, class_="muted"))
        rows = summary[summary["scenario"] == scenario.name].sort_values(["config_id", "phase"])
        rtt_ms = rules.client_rtt_ms(scenario)
        if rtt_ms is not None:
            out.append(tag("p", f"Measured at a known round trip of {rtt_ms:g} ms between the generator and the "
                                "broker (client_latency, through a latency proxy): a confirm window w bounds the "
                                "publish rate at w / RTT until the broker's own capacity caps it (column "
                                "\"w / RTT\").", class_="note"))
        windows = {x.label: x.confirms_in_flight for x in scenario.step_settings or ()}
        body = []
        for r in rows.itertuples(index=False):
            basis = getattr(r, "latency_basis", None) or "intended"
            mode = getattr(r, "rate_mode", None) or "scheduled"
            bound = rules.window_bound(windows.get(r.phase_name, 0), rtt_ms)
            body.append([r.config_id, r.phase_name, "max" if mode == "max" else fmt.rate(r.target_rate),
                         f"{r.confirm_rate:,.0f}", f"{r.consume_rate:,.0f}", fmt.ms(r.e2e_p50_ms),
                         fmt.ms(r.e2e_p95_ms), fmt.ms(r.e2e_p99_ms), basis,
                         ("yes", "ok") if r.valid else ("no", "bad")]
                        + ([] if rtt_ms is None else ["—" if bound is None else f"{bound:,.0f}"]))
        out.append(table(["config", "step", "rate", "confirm rate", "consume rate", "p50", "p95", "p99",
                          "latency from", "generator kept up", *([] if rtt_ms is None else ["w / RTT"])], body,
                         numeric=[3, 4, 5, 6, 7, *([] if rtt_ms is None else [10])]))
        for (cid, name, run_id), client in sorted(ctx.data.client_series.items()):
            if name != scenario.name or client is None or client.empty:
                continue
            first = client["repeat"].min()
            phases = rows[(rows["config_id"] == cid) & (rows["run_id"] == run_id) & (rows["repeat"] == first)]
            steps = [(float(r.start_s), str(r.phase_name)) for r in phases.itertuples(index=False)
                     if hasattr(r, "start_s")]
            title = f"{scenario.name} on {cid}"
            basis = "/".join(sorted(set(phases["latency_basis"].dropna().astype(str)))) or "intended"
            windows = phases if {"start_s", "warmup_s", "duration_s"} <= set(phases.columns) else None
            out.append(ctx.fig(charts.settings_timeseries(fmt.of_repeat(client, first), steps, title, windows, basis),
                               f"{title} (run {run_id}, repeat {first}): confirmed and consumed rate per "
                               "second; dotted lines mark the step boundaries and their setting. Below: "
                               f"each step's e2e p50/p95/p99 (phase_summary, from the {basis} time) and the "
                               "worst latency of each second."))
    out.extend(by_queue_type(ctx))
    out.append(tag("p", "Latency from `sent`: max mode (closed loop) has no intended send time, so end-to-end "
                        "latency is measured from the actual send; `intended`: from the open-loop schedule.",
                   class_="note"))
    return out


def by_queue_type(ctx: ReportContext) -> list[object]:
    """Seed 003's per-step charts: per varied setting, every scenario that steps it (quorum and mirrored)
    as one line on shared axes, its figures the medians over repeats the analysis wrote (repeat_intervals)."""
    out: list[object] = []
    for setting, group in settings_step_points(ctx.client_settings, ctx.summary_ci, ctx.data.phase_summary,
                                               len(ctx.config_ids) > 1).items():
        title = f"{setting} per step, one line per queue type"
        caption = (f"{title}: achieved confirm and consume rate (top) and end-to-end p50/p95/p99 latency "
                   f"measured from the {group.basis} time (bottom), medians over repeats; the x axis marks each "
                   f"step's value.")
        out.append(ctx.fig(charts.settings_steps_by_queue_type(group.points, group.step_labels, setting,
                                                               group.basis, title), caption))
    return out
