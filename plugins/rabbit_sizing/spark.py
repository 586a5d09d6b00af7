"""spark-submit arguments of the analysis jobs, as SparkSubmitOperator takes them.

The DAG's Spark job (spark_jobs/analysis.py, its argv built by spark_jobs.submit):
    analysis.py --spec S --campaign C --config K [--config K2 ...] --run-id R --validate
        (phase_summary of each K, then the campaign's leaderboards; GX on every batch read and table written)
GX runs inside the job's Spark session: a separate validate job would cost another JVM start per batch.
The jobs' Python modules (sizing/, spark_jobs/) reach remote executors as one zip given to --py-files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from adapters.planning import REPO_ROOT, state_dir


def application(job: str) -> str:
    from spark_jobs.submit import application as job_path

    return str(job_path(job, REPO_ROOT))


def submit_conf() -> dict[str, str]:
    """SparkSubmitOperator's conf: spark_jobs.settings' (SQL, driver JVM options), no UI, 4 shuffle partitions."""
    from spark_jobs.submit import spark_conf

    return spark_conf({"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"})


def driver_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The spark-submit process env additions: the repo on PYTHONPATH (what a local master imports)."""
    env = os.environ if env is None else env
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))}


def build_py_files() -> Path:
    from spark_jobs.submit import py_files_zip

    return py_files_zip(state_dir() / "build" / "sizing_jobs.zip", REPO_ROOT)


def analysis_args(run: Mapping[str, Any], config_ids: list[str]) -> list[str]:
    """The analysis job's arguments for one campaign run: these configs' phase_summary from the run's raw
    partitions, then the campaign's leaderboards, GX on everything read and written."""
    from spark_jobs.submit import job_arguments

    baseline = ["--baseline-run", run["baseline_run"]] if run.get("baseline_run") else []  # issue 24
    return [*job_arguments("analysis", spec=run["spec_path"], campaign=run["campaign"], configs=config_ids,
                           run_ids=[run["run_label"]]), *baseline, "--validate", "--docs-dir",
            str(state_dir() / "gx_docs")]
