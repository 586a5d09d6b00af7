"""The report step: renders the campaign's HTML report from the Spark tables (app.report) into S3."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from adapters.objectstore import S3Settings

log = logging.getLogger(__name__)


def build_campaign_report(run: Mapping[str, Any], settings: S3Settings | None = None) -> str:
    from adapters.planning import spec_on_this_worker
    from app.report import build_report

    # A run with a baseline (the DAG's baseline_run param) opens with the comparison (issue 24).
    uri = build_report(spec_on_this_worker(run["spec_path"]), run["run_label"],
                       settings=settings or S3Settings.from_env(), baseline_run=run.get("baseline_run") or None)
    log.info("Report written to %s (fetch it with: python -m app.cli report --campaign %s --run-id %s -o report.html)",
             uri, run["campaign"], run["run_label"])
    return uri
