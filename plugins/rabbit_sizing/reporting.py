"""The report step: renders the campaign's HTML report from the Spark tables (sizing.report) into S3."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)


def build_campaign_report(run: Mapping[str, Any]) -> str:
    from sizing.report import build_report
    from sizing.storage import S3Settings

    uri = build_report(run["spec_path"], run["run_label"], settings=S3Settings.from_env())
    log.info("Report written to %s (fetch it with: python -m sizing.report fetch --campaign %s --run-id %s)",
             uri, run["campaign"], run["run_label"])
    return uri
