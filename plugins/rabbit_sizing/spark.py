"""spark-submit arguments of the analysis jobs, as SparkSubmitOperator takes them.

The DAG's Spark job (spark_jobs/analysis.py, its argv built by spark_jobs.submit):
    analysis.py --spec S --campaign C --config K [--config K2 ...] --run-id R --validate
        (phase_summary of each K, then the campaign's leaderboards; GX on every batch read and table written)
GX runs inside the job's Spark session: a separate validate job would cost another JVM start per batch.

What the executors need travels with the job, built by the task that submits (operators/analysis.py), never a
path another task left on its worker's disk: the jobs' Python packages as one --py-files zip, and, for a master
that is not local, the object-store credentials as `spark.executorEnv.*` in a properties file (mode 0600, removed
after the submit: not on a command line, where `ps` and the task log would show them).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from adapters.planning import REPO_ROOT, spec_on_this_worker
from adapters.statepaths import state_paths


def application(job: str) -> str:
    from spark_jobs.submit import application as job_path

    return str(job_path(job, REPO_ROOT))


def submit_conf() -> dict[str, str]:
    """SparkSubmitOperator's conf: spark_jobs.settings' (SQL, driver JVM options, Python), no UI, 4 shuffle
    partitions."""
    from spark_jobs.submit import spark_conf

    return spark_conf({"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"})


def driver_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The spark-submit process env additions. The driver runs on the task's worker: the repo on its PYTHONPATH,
    and the price catalogs named (spark-submit puts the --py-files zip first on the driver's path, and a `sizing`
    imported from the zip finds no catalogs/ beside it)."""
    env = os.environ if env is None else env
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])),
            "SIZING_CATALOG_DIR": env.get("SIZING_CATALOG_DIR") or str(REPO_ROOT / "catalogs")}


def build_py_files(directory: Path | None = None) -> Path:
    """The --py-files zip, built where the submit runs (a fresh one per submit)."""
    from spark_jobs.submit import py_files_zip

    return py_files_zip((directory or state_paths().build) / "sizing_jobs.zip", REPO_ROOT)


def is_local_master(master: str) -> bool:
    return master.startswith("local")


def executor_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """What executors of a non-local master need to reach the object store besides the StoreSpec (endpoint, bucket)
    the data source passes them: the credentials the driver itself uses (boto3's chain: environment, profile,
    instance role), frozen, and the region."""
    from adapters.objectstore import session_credentials

    env = os.environ if env is None else env
    return {**session_credentials(), "AWS_DEFAULT_REGION": env.get("AWS_DEFAULT_REGION", "us-east-1")}


def properties_text(conf: Mapping[str, str]) -> str:
    """A Java properties file (spark-submit --properties-file): one `key=value` a line, backslashes escaped."""
    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace("\n", "\\n")

    return "".join(f"{escape(key)}={escape(value)}\n" for key, value in conf.items())


def write_executor_properties(directory: Path, env: Mapping[str, str]) -> Path:
    """The executors' environment as `spark.executorEnv.*`, with the redaction regex that hides all of it in the
    UI and event logs (spark_jobs.settings.REDACTION_REGEX)."""
    from spark_jobs.settings import REDACTION_REGEX

    path = directory / "executor.properties"
    path.touch(mode=0o600)
    path.chmod(0o600)
    conf = {"spark.redaction.regex": REDACTION_REGEX, **{f"spark.executorEnv.{k}": v for k, v in env.items()}}
    path.write_text(properties_text(conf))
    return path


def analysis_args(run: Mapping[str, Any], config_ids: list[str]) -> list[str]:
    """The analysis job's arguments for one campaign run: these configs' phase_summary from the run's raw
    partitions, then the campaign's leaderboards, GX on everything read and written. The spec is this worker's
    copy of the run's resolved spec (fetched from the object store when another worker validated it)."""
    from spark_jobs.submit import job_arguments

    baseline = ["--baseline-run", run["baseline_run"]] if run.get("baseline_run") else []  # issue 24
    return [*job_arguments("analysis", spec=spec_on_this_worker(run["spec_path"]), campaign=run["campaign"],
                           configs=config_ids, run_ids=[run["run_label"]]),
            *baseline, "--validate", "--docs-dir", str(state_paths().gx_docs)]
