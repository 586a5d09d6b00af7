"""Campaign report: one self-contained HTML file per campaign run, built from the Spark tables.

    build_report(campaign_spec_path, run_id, settings=None) -> "s3://bucket/reports/campaign=C/run=R/report.html"

CLI: `python -m app.report build --campaign C --run-id R --spec campaigns/X.yaml [-o file]`
     fetch a built one: `python -m app.cli report --campaign C --run-id R [-o file]`
"""

from app.report.build import build_report, fetch_report, render_report

__all__ = ["build_report", "fetch_report", "render_report"]
