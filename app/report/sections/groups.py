"""Workload groups (issue 14): per scenario with groups, what each group runs and every group's figures per phase
(tables.ReportData.group_summary); the verdicts, boards and charts read the foreground group's rows only."""

from __future__ import annotations

from app.report import fmt
from app.report.context import ReportContext
from app.report.html import table, tag
from sizing.campaign import WorkloadGroup


def describe_group(group: WorkloadGroup) -> str:
    """A group's workload in words (from the spec): queues, message size, clients and its rate."""
    w = group.workload
    args = ", ".join(f"{k}: {v}" for k, v in w.queues.arguments.items())
    rate = ""
    if group.hold == "max":
        rate = ", publishing at max (closed loop)"
    elif group.hold:
        total = (group.schedule.step_rates or (0.0,))[0]
        per = group.hold.removesuffix("/publisher")
        rate = f", held at {per} msg/s per publisher ({total:g} msg/s)" if per != group.hold else \
            f", held at {total:g} msg/s"
    if not w.publishers.confirms_in_flight:
        rate += ", no publisher confirms (its confirm rate is 0)"
    return (f"{w.queues.count} {w.queues.type} queue(s){f' ({args})' if args else ''}, {w.publishers.count} "
            f"publisher(s), {w.consumers.count} consumer(s), {w.message.size_bytes} B messages{rate}")


def render(ctx: ReportContext) -> list[object]:
    """Per scenario with workload groups: what each group runs, and every group's figures per phase. The
    verdicts, boards and charts above read the foreground group's rows only."""
    grouped = [s for s in ctx.campaign.scenarios if s.groups]
    if not grouped:
        return []
    out: list[object] = [tag("h2", "Workload groups", id="groups")]
    every = ctx.data.group_summary if ctx.data.group_summary is not None else ctx.data.phase_summary
    for scenario in grouped:
        out.append(tag("h3", f"Scenario {scenario.name}"))
        lines = [tag("li", [tag("b", g.name), f" ({'foreground' if g.name == scenario.foreground else 'background'}"
                            f"): {describe_group(g)}"]) for g in scenario.workload_groups]
        out.append(tag("ul", lines))
        background = ", ".join(f"{g.name}: {describe_group(g)}" for g in scenario.background_groups)
        out.append(tag("p", f"Background load: {background}. The verdicts, leaderboards and charts judge the "
                            f"foreground group ({scenario.foreground}) only.", class_="note"))
        rows = every[every["scenario"] == scenario.name].sort_values(["config_id", "repeat", "phase", "group"])
        body = [[r.config_id, int(r.repeat), r.phase_name, r.group,
                 "foreground" if r.foreground else "background",
                 "max" if (getattr(r, "rate_mode", None) or "scheduled") == "max" else fmt.rate(r.target_rate),
                 f"{r.confirm_rate:,.0f}", f"{r.consume_rate:,.0f}", fmt.ms(r.e2e_p50_ms), fmt.ms(r.e2e_p99_ms),
                 fmt.count(r.lost), ("yes", "ok") if r.valid else ("no", "bad")]
                for r in rows.itertuples(index=False)]
        out.append(table(["config", "repeat", "phase", "group", "role", "target", "confirm rate", "consume rate",
                          "p50", "p99", "lost", "generator kept up"], body, numeric=[5, 6, 7, 8, 9, 10]))
    return out
