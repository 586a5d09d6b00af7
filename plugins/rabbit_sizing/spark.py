"""spark-submit arguments of the analysis jobs, as SparkSubmitOperator takes them.

The jobs (spark_jobs/, branch analysis) read raw runs and write tables under the S3 layout; their
arguments are built by spark_jobs.submit when it is present, so the DAG and a developer's shell agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rabbit_sizing.planning import REPO_ROOT


def application(job: str) -> str:
    return str(REPO_ROOT / "spark_jobs" / f"{job}.py")


def job_args(job: str, campaign: str, run_label: str, config_id: str | None = None) -> list[str]:
    args = ["--campaign", campaign, "--run-label", run_label]
    if config_id:
        args += ["--config", config_id]
    return args


def per_config_args(job: str, configs: list[Mapping[str, Any]]) -> list[list[str]]:
    return [job_args(job, c["campaign"], c["run_label"], c["config_id"]) for c in configs]
