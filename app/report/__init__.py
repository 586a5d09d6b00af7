"""Campaign report: one self-contained HTML file per campaign run, built from the Spark tables.

    build_report(campaign_spec_path, run_id, settings=None) -> "s3://bucket/reports/campaign=C/run=R/report.html"

CLI: `python -m app.report build --campaign C --run-id R --spec campaigns/X.yaml [-o file]`
     fetch a built one: `python -m app.cli report --campaign C --run-id R [-o file]`
"""

from typing import Any

__all__ = ["build_report", "fetch_report", "render_report"]


def __getattr__(name: str) -> Any:
    """The public functions, imported from app.report.build when first asked for: the package imports nothing at
    import time, so no module of it imports back through this __init__ (no cycle through the package)."""
    if name in __all__:
        from app.report import build

        return getattr(build, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
