"""The raw results in S3 as the tasks see them: clear stale ones before a trial, check every run landed after
it, publish the load generator's console logs (from the worker that ran the generator)."""

from __future__ import annotations

from pathlib import Path

from adapters.statepaths import state_paths
from sizing.layout import run_log_key
from sizing.plan import Trial

AWS_CONN_ID = "aws_default"


def raw_store():
    """(S3Hook, bucket) of the raw results: the `aws_default` connection and SIZING_S3_BUCKET."""
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    from adapters.objectstore import S3Settings

    return S3Hook(aws_conn_id=AWS_CONN_ID), S3Settings.from_env().bucket


def run_log_path(trial: Trial, scenario: str, repeat: int) -> Path:
    return state_paths().run_log(trial.campaign, trial.config_id, trial.run_label, scenario, repeat)


def log_key(trial: Trial, scenario: str, repeat: int) -> str:
    return run_log_key(trial.campaign, trial.config_id, trial.run_label, scenario, repeat)


def publish_run_log(trial: Trial, scenario: str, repeat: int) -> str | None:
    """Put one load run's console log next to its raw results, from the worker that ran it (run_scenarios, right
    after the run): the task checking the run may run on another worker, which never saw the file."""
    path = run_log_path(trial, scenario, repeat)
    if not path.exists():
        return None
    hook, bucket = raw_store()
    key = log_key(trial, scenario, repeat)
    hook.load_file(str(path), key, bucket_name=bucket, replace=True)
    return key


def publish_run_logs(trial: Trial, runs: list[dict]) -> list[str]:
    """Fails when a run's manifest is missing (the load generator writes it last); returns the keys of the runs'
    console logs in the object store (run_scenarios put them there)."""
    from sizing.layout import RunKey, manifest_key

    hook, bucket = raw_store()
    manifests = [manifest_key(RunKey(**r)) for r in runs]
    missing = [key for key in manifests if not hook.check_for_key(key, bucket_name=bucket)]
    if missing:
        raise RuntimeError(f"load runs finished but their manifests are missing in s3://{bucket}: {missing}")
    keys = [log_key(trial, r["scenario"], r["repeat"]) for r in runs]
    return [key for key in keys if hook.check_for_key(key, bucket_name=bucket)]


def configs_with_complete_raw(trials: list[Trial]) -> list[Trial]:
    """One trial per config whose every trial (repeat) has every run's manifest in S3, saying `complete`. The load
    generator writes its manifest when it starts (status `running`) and again at the end: a generator killed
    mid-run leaves a manifest that is not complete, and its partial records are not analysed."""
    import json

    from sizing.runplan import complete_configs

    hook, bucket = raw_store()

    def complete(key: str) -> bool:
        if not hook.check_for_key(key, bucket_name=bucket):
            return False
        return json.loads(hook.read_key(key, bucket_name=bucket)).get("status") == "complete"

    return complete_configs(trials, complete)
