"""Node resources (issue 15; seed 000 Figs 6-9): per measured phase (intensities and client-setting steps, seed 004's
max rate among them) what phase_summary derived from node_seconds (CPU, disk, network, the bottleneck label) and
each node's figures over the run; and, for the verdict, where each config stopped matching its target and what ran
out there, or, for a compare or characterise campaign, what bound each measured phase."""

from __future__ import annotations

import pandas as pd

from app.report import charts, fmt
from app.report.context import ReportContext
from app.report.html import table, tag
from sizing.campaign import Scenario, families
from sizing.criteria.rules import BOTTLENECKS, NO_BOTTLENECK, is_client_settings, is_intensity


def stopped_matching(summary: pd.DataFrame, config_id: str, scenarios: list[str]
                     ) -> tuple[float, str | None, str | None] | None:
    """The lowest intensity (target rate) of the config's capacity scenarios that some repeat did not match, with
    the bottleneck label phase_summary gave it (the most common over repeats) and one repeat's detail; None when
    every intensity matched."""
    rows = summary[(summary["config_id"] == config_id) & summary["scenario"].isin(scenarios)]
    missed = rows[~rows["matched_target"].fillna(False).astype(bool)]
    if missed.empty:
        return None
    rate = float(missed["target_rate"].min())
    at = missed[missed["target_rate"] == rate].sort_values("repeat")
    labels = at["bottleneck"].dropna()
    label = str(labels.mode().iloc[0]) if not labels.empty else None
    details = at.loc[at["bottleneck"] == label, "bottleneck_detail"].dropna() if label else pd.Series(dtype=object)
    return rate, label, (str(details.iloc[0]) if not details.empty else None)


def measured(scenarios: tuple[Scenario, ...] | list[Scenario]) -> list[str]:
    """The families whose phases are steady measurements of a config (intensities, client-setting steps: a max-rate
    step is one), in spec order: the ones whose resources and bottleneck the report shows. Adverse scenarios and
    searches have their own sections."""
    return [s.name for s in families(scenarios) if is_intensity(s) or is_client_settings(s)]


def bound_by(summary: pd.DataFrame, config_ids: list[str], scenarios: list[str]
             ) -> list[tuple[str, str, str, str | None, str | None]]:
    """(config, scenario, phase, bottleneck, detail) for every phase of those scenarios that phase_summary
    labelled: the most common label over repeats and one repeat's detail, in config, scenario and phase order."""
    out = []
    for config_id in config_ids:
        for scenario in scenarios:
            rows = summary[(summary["config_id"] == config_id) & (summary["scenario"] == scenario)]
            for _phase, at in rows.sort_values(["phase", "repeat"]).groupby("phase", sort=True):
                labels = at["bottleneck"].dropna()
                if labels.empty:
                    continue
                label = str(labels.mode().iloc[0])
                details = at.loc[at["bottleneck"] == label, "bottleneck_detail"].dropna()
                out.append((config_id, scenario, str(at["phase_name"].iloc[0]), label,
                            str(details.iloc[0]) if not details.empty else None))
    return out


# The labels as the rule orders them (sizing.criteria.rules.BOTTLENECKS): the report lists what the rule can name.
LABELS = f"{', '.join(BOTTLENECKS)}, or {NO_BOTTLENECK} = coordination"


def bound_by_answer(ctx: ReportContext) -> list[object]:
    """A compare or characterise campaign's answer: what ran out in each measured phase (none: coordination)."""
    rows = bound_by(ctx.summary, ctx.config_ids, measured(ctx.campaign.scenarios))
    if not rows:
        return []
    return [tag("p", "What bound each measured phase (sizing.criteria.rules bottleneck on the node's figures against "
                     f"its limits and the clients' own ceilings: {LABELS}):"),
            tag("ul", [tag("li", [tag("b", config_id), f", {scenario} ({phase}): {label}"
                                  + (f" ({detail})" if detail else "")])
                       for config_id, scenario, phase, label, detail in rows])]


def bottleneck_verdict(ctx: ReportContext) -> list[object]:
    """Per config, what ran out at the first intensity it did not match (phase_summary.bottleneck)."""
    items = []
    for config_id in ctx.config_ids:
        found = stopped_matching(ctx.summary, config_id, [s.name for s in ctx.intensity])
        if found is None:
            continue
        rate, label, detail = found
        items.append(tag("li", [tag("b", config_id), f": stopped matching at {fmt.rate(rate)} msg/s; bottleneck "
                                f"{label or 'unknown (no node figures)'}" + (f" ({detail})" if detail else "")]))
    if not items:
        return []
    return [tag("p", "Where each config stopped matching its target, and what ran out there (sizing.criteria.rules "
                     f"bottleneck: {LABELS}):"),
            tag("ul", items)]


def render(ctx: ReportContext) -> list[object]:
    out: list[object] = [tag("h2", "Node resources", id="resources")]
    summary = ctx.summary
    body = []
    for config_id in ctx.config_ids:
        for scenario in measured(ctx.campaign.scenarios):
            rows = summary[(summary["config_id"] == config_id) & (summary["scenario"] == scenario)]
            for r in rows.sort_values(["repeat", "phase"]).itertuples(index=False):
                if pd.isna(r.cpu_busiest_mean) and r.bottleneck is None:
                    continue
                body.append([config_id, int(r.repeat), r.phase_name, fmt.pct(r.cpu_busiest_mean),
                             fmt.pct(r.cpu_busiest_p95), fmt.pct(r.machine_cpu_busy_mean),
                             fmt.num(r.disk_write_mb_s, 1), fmt.num(r.disk_write_iops, 0),
                             fmt.num(r.disk_write_kb_per_op, 1), fmt.num(r.net_mb_s, 1),
                             (r.bottleneck or "—", "bad" if r.bottleneck not in (None, "none") else "")])
    if body:
        out.append(table(["config", "repeat", "phase", "busiest CPU mean", "p95", "machine CPU", "disk write MB/s",
                          "write IOPS", "KB per write", "network MB/s", "bottleneck"], body,
                         numeric=[3, 4, 5, 6, 7, 8, 9]))
        out.append(tag("p", "KB per write (seed 000 Figs 7/9): the IOPS-busiest node's bytes written per device "
                            "write in the phase (phase_summary disk_write_kb_per_op; n/a where the target does not "
                            "count device writes: locally with the scale model off, where no volume is a device "
                            "of its own).", class_="note"))
    figures = []
    for (config_id, scenario, run_id), nodes in sorted(ctx.data.node_series.items()):
        if nodes is None or nodes.empty:
            continue
        first = nodes["repeat"].min()
        phases = summary[(summary["config_id"] == config_id) & (summary["scenario"] == scenario)
                         & (summary["run_id"] == run_id) & (summary["repeat"] == first)]
        boundaries = pd.DataFrame({"kind": "phase_start", "second": phases.get("start_s", pd.Series(dtype=float))})
        svg, width = charts.resource_panels(fmt.of_repeat(nodes, first), boundaries,
                                            f"Node resources: {config_id}, {scenario}")
        figures.append(ctx.fig(svg, f"CPU, network and disk per node of {config_id} over the "
                                    f"phases of {scenario} (run {run_id}, repeat {first}; node_series"
                                    + (f", means over {width} s bins" if width > 1 else "")
                                    + "; gaps = seconds without figures)."))
    if not body and not figures:
        return [*out, tag("p", "No node resource figures were recorded.", class_="muted")]
    return [*out, *figures]
