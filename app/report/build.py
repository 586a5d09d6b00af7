"""Assemble the campaign report: the sections in page order (app.report.sections, app.report.answer), each
rendered from one ReportContext. `render_report` is pure (data in, HTML out); `build_report` does the I/O."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from adapters.objectstore import S3Settings
from app.report import answer
from app.report.context import ReportContext
from app.report.history import RunHistory, load_history
from app.report.html import page, tag
from app.report.sections import (
    adverse,
    broker,
    client_settings,
    comparison,
    disks,
    groups,
    header,
    intensity,
    leaderboards,
    quality,
    resources,
    search,
    trends,
    upgrade,
    verdict,
    volumes,
)
from app.report.tables import ReportData, load_report_data
from sizing.campaign import Campaign, load_campaign
from sizing.contract import layout
from sizing.criteria.rules import is_intensity
from sizing.planning.plan import plan_configs

# The page, top to bottom. A section with nothing to show returns no parts. A campaign comparing RabbitMQ versions
# opens with the upgrade question (issue 33: the `upgrade` table holds rows for no other), a run compared with a
# baseline run with that comparison (issue 24).
SECTIONS: tuple[Callable[[ReportContext], list[object]], ...] = (
    header.render, upgrade.render, comparison.render, verdict.render, answer.render, intensity.render,
    leaderboards.render, trends.render, volumes.render, search.render, groups.render, adverse.render,
    client_settings.render, broker.render, resources.render, disks.render, quality.render)


def render_report(campaign: Campaign, data: ReportData, run_id: str, generated_at: str | None = None,
                  history: RunHistory | None = None) -> str:
    """The whole report as one self-contained HTML document (pure)."""
    stamp = generated_at or dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    ctx = ReportContext.build(campaign, data, run_id, stamp, history)
    body = [part for section in SECTIONS for part in section(ctx)]
    body.append(tag("p", f"rabbit-sizing report · {ctx.charts} charts · self-contained (no external resources)",
                    class_="note"))
    return page(f"Sizing report {campaign.name} / {run_id}", body)


# ---------------------------------------------------------------------------------------------- I/O


def volume_siblings(campaign: Campaign) -> dict[str, list[str]]:
    """config id -> every config of the same cluster shape (nodes x instance type, one volume each) on another
    volume type too (seed 000 compares one cluster on io1, gp2 and st1 at the target, its Figs 26-31)."""
    shapes: dict[tuple[int, str], list[str]] = {}
    for shape in campaign.clusters:
        if not shape.dedicated:
            shapes.setdefault((shape.nodes, shape.instance_type), []).append(shape.config_id)
    return {config_id: ids for ids in shapes.values() if len(ids) > 1 for config_id in ids}


def time_series_scenarios(campaign: Campaign) -> list[str]:
    """Scenarios whose per-second raw series the report reads: the adverse ones (seed 002's charts) and the
    client-setting runs (seed 003's rate and latency over the run)."""
    return [s.name for s in campaign.scenarios if not is_intensity(s)]


def build_report(campaign_spec_path: str, run_id: str, settings: S3Settings | None = None,
                 local_path: str | Path | None = None, resource_configs: list[str] | None = None,
                 baseline_run: str | None = None) -> str:
    """Read the run's tables from S3, render the report, write it to S3 (and to `local_path`,
    default build/reports/<campaign>/<run>/report.html). Returns the report's s3:// URI. With a baseline run (the
    argument, else the one the run's `runs` row names), the report opens with the comparison."""
    settings = settings or S3Settings.from_env()
    campaign = load_campaign(campaign_spec_path)
    data = load_report_data(settings, campaign.name, [c.config_id for c in plan_configs(campaign)],
                            time_series_scenarios(campaign),
                            campaign.target.rate,
                            resource_scenarios=[s.name for s in campaign.scenarios if is_intensity(s)],
                            resource_configs=resource_configs,  # None: the top and bottom of the leaderboard
                            volume_siblings=volume_siblings(campaign), run_id=run_id)
    history = load_history(settings.store(), campaign, run_id, baseline_run)
    document = render_report(campaign, data, run_id, history=history)
    key = layout.report_key(campaign.name, run_id)
    settings.store().put(key, document.encode(), content_type="text/html; charset=utf-8")
    path = Path(local_path) if local_path else Path("build/reports") / campaign.name / run_id / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(document)
    return layout.s3_uri(settings.bucket, key)


def fetch_report(campaign: str, run_id: str, settings: S3Settings | None = None) -> bytes:
    settings = settings or S3Settings.from_env()
    return settings.store().get(layout.report_key(campaign, run_id))
