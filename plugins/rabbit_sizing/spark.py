"""spark-submit arguments of the analysis jobs, as SparkSubmitOperator takes them.

Job CLIs (spark_jobs/*.py, built by spark_jobs.submit):
    phase_summary.py --spec S --campaign C --config K --run-id R --validate   (GX on the raw batch and the table)
    leaderboards.py  --spec S --campaign C --validate R                        (GX on the campaign tables)
GX runs inside each job's Spark session: a separate validate job would cost another JVM start per batch.
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


def analysis_args(run: Mapping[str, Any], config_ids: list[str]) -> dict[str, Any]:
    """Arguments of every analysis job of one campaign run (per-config lists for the mapped tasks)."""
    from spark_jobs.submit import job_arguments

    spec, campaign, label = run["spec_path"], run["campaign"], run["run_label"]
    docs = ["--docs-dir", str(state_dir() / "gx_docs")]
    return {
        "per_config": [{
            "config_id": config_id,
            "phase_summary": [*job_arguments("phase_summary", spec=spec, campaign=campaign,
                                             configs=[config_id], run_ids=[label]), "--validate", *docs],
        } for config_id in config_ids],
        "leaderboards": [*job_arguments("leaderboards", spec=spec, campaign=campaign), "--validate", label, *docs],
    }
