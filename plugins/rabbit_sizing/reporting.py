"""The report step. The report module (sizing/report.py) is written separately; this is its seam.

Expected interface: `sizing.report.build_report(campaign: str, run_label: str, spec_path: str,
settings: sizing.storage.S3Settings) -> str`, returning the S3 key it wrote (layout.report_key).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any


def build_report_if_available(run: Mapping[str, Any]) -> str:
    from airflow.sdk.exceptions import AirflowSkipException

    from sizing.storage import S3Settings

    if importlib.util.find_spec("sizing.report") is None:
        raise AirflowSkipException("sizing.report is not part of this checkout yet: report skipped")
    from sizing import report

    return report.build_report(campaign=run["campaign"], run_label=run["run_label"], spec_path=run["spec_path"],
                               settings=S3Settings.from_env())
