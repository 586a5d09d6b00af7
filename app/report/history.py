"""The report's run-history sections (issue 24): the comparison with a baseline run, which the report opens with
when the run names one, and each headline metric across every stored run with its change points. Every figure is
sizing.comparison's or sizing.trends' (the same functions `sizing compare` and `sizing trend` call), computed from
the runs' stored table rows (app.history reads them); nothing here computes one.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from app.report import charts
from app.report.html import table, tag
from sizing.comparison import (
    IMPROVED,
    REGRESSED,
    SUSTAINABLE,
    TABLE_HEADER,
    TOP_THROUGHPUT,
    Comparison,
    format_value,
    table_rows,
)
from sizing.spec import Campaign
from sizing.stats import UNCHANGED, level_text
from sizing.trends import ALPHA, Trend

VERDICT_CSS = {REGRESSED: "bad", IMPROVED: "ok", UNCHANGED: "", "inconclusive": "warn"}


@dataclass
class RunHistory:
    """What the report knows of the run's history: its `runs` row, the comparison with its baseline (or why there
    is none), and the headline metrics' trends over every stored run up to it."""

    record: dict[str, Any] | None = None
    baseline_run: str | None = None
    comparison: Comparison | None = None
    problem: str | None = None  # why the baseline could not be compared
    trends: list[Trend] = field(default_factory=list)


def _when(epoch: Any) -> str:
    return dt.datetime.fromtimestamp(float(epoch), dt.UTC).strftime("%Y-%m-%d %H:%M UTC") if epoch else "?"


def record_line(record: dict[str, Any] | None) -> str:
    """The header's line about what the run ran on."""
    if not record:
        return "No runs-table row for this run (analysed before the runs table existed)."
    commit = record.get("code_commit") or "?"
    return (f"Run status {record['status']} · {_when(record.get('started_at'))} to {_when(record.get('ended_at'))} · "
            f"RabbitMQ {record.get('rabbitmq_version') or '?'} · Erlang {record.get('erlang_version') or '?'} · "
            f"pika {record.get('pika_version') or '?'} · Spark {record.get('spark_version') or '?'} · code "
            f"{commit[:12]}{'-dirty' if commit.endswith('-dirty') else ''}")


def comparison_section(history: RunHistory) -> list[object]:
    """First section when the run has a baseline: how it compares, metric by metric."""
    if not history.baseline_run:
        return []
    out: list[object] = [tag("h2", f"Compared with run {history.baseline_run}", id="comparison", class_="first")]
    c = history.comparison
    if c is None:
        return [*out, tag("div", tag("p", f"No comparison: {history.problem}", class_="headline"),
                          class_="verdict none")]
    counts = c.counts()
    regressed = [ch for ch in c.changes if ch.verdict == REGRESSED]
    headline = (f"Regressed: {len(regressed)} figure(s) — " + "; ".join(
        f"{ch.config_id} {ch.label} ({ch.scenario})" for ch in regressed[:4]) if regressed
        else "Nothing regressed against the baseline.")
    out.append(tag("div", [tag("p", headline, class_="headline"), tag("p", (
        f"{counts[IMPROVED]} improved, {counts[REGRESSED]} regressed, {counts[UNCHANGED]} unchanged, "
        f"{counts['inconclusive']} inconclusive. A change is called when its exact Mann-Whitney interval reaches "
        f"{level_text(c.confidence)} and the estimate is at least {c.threshold:.0%} (sizing.stats); three repeats a "
        "side reach 90 % and no more, fewer are inconclusive by construction. `sizing compare --campaign "
        f"{c.campaign} --base {c.base_run} --head {c.head_run}` prints the same table."))],
        class_="verdict" + (" none" if regressed else "")))
    if c.spec_differences:
        out += [tag("p", f"The two runs ran different specs ({len(c.spec_differences)} difference(s), base -> "
                         "this run):"), tag("ul", [tag("li", line) for line in c.spec_differences[:30]])]
    fields = [("status", "status"), ("RabbitMQ", "rabbitmq_version"), ("Erlang", "erlang_version"),
              ("pika", "pika_version"), ("Spark", "spark_version"), ("spec", "spec_hash"), ("code", "code_commit"),
              ("instance types", "instance_types")]
    out.append(table(["", f"base {c.base_run}", f"this run {c.head_run}"],
                     [[label, str((c.base_record or {}).get(key) or "?"), str((c.head_record or {}).get(key) or "?")]
                      for label, key in fields]))
    rows = [[*row[:-1], (row[-1], VERDICT_CSS.get(row[-1], ""))] for row in table_rows(c)]
    out.append(table(TABLE_HEADER, rows, numeric=[3, 4]))
    notes = [f"{ch.config_id} / {ch.label}: {ch.note}" for ch in c.changes if ch.note and ch.verdict != UNCHANGED]
    if notes:
        out.append(tag("p", "Notes: " + "; ".join(notes[:12]), class_="note"))
    if c.only_in_base or c.only_in_head:
        out.append(tag("p", "Measured in one run only (not compared): " + "; ".join(
            [f"base: {x}" for x in c.only_in_base] + [f"this run: {x}" for x in c.only_in_head]), class_="note"))
    return out


def trend_metrics(campaign: Campaign) -> list[str]:
    """The headline metrics the report follows across runs: the capacity from a search when the campaign has one,
    else the top throughput within the SLO."""
    return [SUSTAINABLE.name] if any(s.search is not None for s in campaign.scenarios) else [TOP_THROUGHPUT.name]


def trend_section(history: RunHistory, colors: dict, run_id: str, fig) -> list[object]:
    """Each headline metric over the stored runs, one line per config, with change points."""
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
                               {t.config_id: [c.run_id for c in t.changes] for t in trends}, colors,
                               f"{label} across runs", "msg/s (median over repeats)", current_run=run_id)
        minimum = trends[0].min_runs
        out.append(fig(svg, f"{label.capitalize()} per run (median of its repeats with the order-statistic "
                            f"interval), oldest first; dashed: a change point (Pettitt rank test, exact permutation "
                            f"p <= {ALPHA:.2f}, shift >= 5 %)."))
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


# ------------------------------------------------------------------------------------------ reading (I/O)


def load_history(store, campaign: Campaign, run_id: str, baseline_run: str | None = None) -> RunHistory:
    """The run's `runs` row, its comparison with `baseline_run` (default: the baseline its row names) and the
    headline trends over every stored run that started no later than it."""
    from app.history import run_spec, run_tables, stored_run_records
    from sizing.comparison import compare_runs
    from sizing.trends import run_order, trend

    records = {r["run_id"]: r for r in stored_run_records(store, campaign.name)}
    record = records.get(run_id)
    history = RunHistory(record=record, baseline_run=baseline_run or (record or {}).get("baseline_run"))
    tables = {r: run_tables(store, campaign.name, r, rec) for r, rec in records.items()}
    if history.baseline_run:
        base = records.get(history.baseline_run)
        if base is None:
            history.problem = (f"run {history.baseline_run} has no runs-table row in campaign {campaign.name} "
                               f"(stored runs: {', '.join(records) or 'none'})")
        elif record is None:
            history.problem = f"this run ({run_id}) has no runs-table row"
        else:
            _, base_raw = run_spec(base)
            _, head_raw = run_spec(record)
            history.comparison = compare_runs(campaign, tables[history.baseline_run], tables[run_id],
                                              base_spec=base_raw, head_spec=head_raw)
    upto = run_order(record, run_id)
    earlier = [tables[r] for r, rec in records.items() if run_order(rec, r) <= upto] if record else []
    for metric in trend_metrics(campaign):
        for shape in campaign.clusters:
            try:
                series = trend(campaign, earlier, shape.config_id, metric)
            except ValueError:  # measured in several scenarios: the report shows none rather than guess
                continue
            if series.points:
                history.trends.append(series)
    return history
