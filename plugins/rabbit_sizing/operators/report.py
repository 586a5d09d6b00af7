"""The report step: renders the campaign's HTML report into S3 and links the task to it in the UI."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator

from rabbit_sizing.links import REPORT_URL_KEY, ReportLink


class ReportOperator(BaseOperator):
    """Builds the report (verdict, charts, leaderboards, data quality) from the Spark tables; returns its
    s3:// URI and pushes the URL a browser opens (REPORT_URL_KEY), which the "Campaign report" link shows."""

    template_fields: Sequence[str] = ("run",)
    operator_extra_links = (ReportLink(),)

    def __init__(self, *, run: Any, **kwargs) -> None:
        super().__init__(**kwargs)
        self.run = run

    def execute(self, context) -> str:
        from adapters.objectstore import S3Settings
        from rabbit_sizing.links import report_url
        from rabbit_sizing.reporting import build_campaign_report

        settings = S3Settings.from_env()
        uri = build_campaign_report(self.run, settings)
        url = report_url(uri, settings)
        context["ti"].xcom_push(key=REPORT_URL_KEY, value=url)
        self.log.info("Report: %s (open it from the task's %r link)", url, ReportLink.name)
        return uri
