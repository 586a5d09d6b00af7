"""The page's header: the campaign, which runs its tables came from, what the run ran on (its `runs` row, issue 24),
the target and workload, the table of contents."""

from __future__ import annotations

import datetime as dt
from typing import Any

from app.report import fmt
from app.report.context import ReportContext
from app.report.html import Raw, tag

CONTENTS = [("verdict", "Verdict"), ("intensity", "Increasing intensity"), ("leaderboards", "Leaderboards"),
            ("adverse", "Adverse"), ("broker", "Broker metrics"), ("resources", "Node resources"),
            ("quality", "Data quality")]


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


def measured_line(record: dict[str, Any] | None) -> str:
    """What every figure below was measured on (the runs row's own words: sizing.resources.scalemodel.measured_on),
    first thing a reader sees: a local figure is never a cloud figure."""
    if not record or not record.get("measured_on"):
        return "Measured on: not recorded (analysed before the runs table said so)."
    enforced = record.get("envelope_enforced")
    return (f"Measured on: {record['measured_on']}" + (f" ({enforced})" if enforced else "")
            + (". Figures are of this machine's scaled nodes, not of the cloud instances named."
               if str(record["measured_on"]).startswith("local") else "."))


def render(ctx: ReportContext) -> list[object]:
    c = ctx.campaign
    scenarios = ", ".join(s.name for s in c.scenarios)
    toc = [tag("a", title, href=f"#{anchor}") for anchor, title in CONTENTS]
    runs = sorted(ctx.data.phase_summary["run_id"].astype(str).unique())
    return [Raw('<header class="top">'), tag("h1", f"RabbitMQ sizing report: {c.name}"),
            tag("p", c.description, class_="meta") if c.description else "",
            tag("p", f"Campaign run {ctx.run_id} · data from run(s) {', '.join(runs)} · generated "
                     f"{ctx.generated_at} · spec {c.spec_hash} · catalog {c.catalog_name}", class_="meta"),
            tag("p", record_line(ctx.history.record), class_="meta"),
            tag("p", measured_line(ctx.history.record), class_="measured"),
            tag("p", f"Target {c.target.rate:,.0f} msg/s with end-to-end p99 < {fmt.ms(c.target.p99_latency_ms)} · "
                     f"{len(ctx.configs)} configs · scenarios: {scenarios} · repeats: {c.repeats}"
                     + (f" (tables hold up to {ctx.repeats_seen})" if ctx.repeats_seen != c.repeats else "")
                     + " · "
                     f"{c.workload.queues.count} {c.workload.queues.type} queues, "
                     f"{c.workload.publishers.count} publishers, {c.workload.consumers.count} consumers, "
                     f"{c.workload.message.size_bytes} B messages", class_="meta"),
            *spec_warnings(c.warnings),
            tag("nav", toc, class_="toc"), Raw("</header>")]


def spec_warnings(warnings: tuple[Any, ...]) -> list[object]:
    """What the runs' RabbitMQ version accepted and ignored (sizing/campaign/versionrules.py): said beside the figures,
    so none reads as the effect of a setting the broker never applied."""
    if not warnings:
        return []
    return [tag("p", "Spec settings the broker ignored:", class_="meta"),
            tag("ul", [tag("li", f"{w.path}: {w.reason}") for w in warnings], class_="meta")]
