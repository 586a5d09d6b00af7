"""After a config's load runs: check every run landed in S3 and publish the load generator's console logs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rabbit_sizing.planning import state_dir

AWS_CONN_ID = "aws_default"


def run_log_path(config: Mapping[str, Any], scenario: str, repeat: int) -> Path:
    return (state_dir() / "runs" / config["campaign"] / config["config_id"] / config["run_label"]
            / f"{scenario}-r{repeat}.log")


def log_key(config: Mapping[str, Any], scenario: str, repeat: int) -> str:
    return (f"logs/campaign={config['campaign']}/config={config['config_id']}/run={config['run_label']}/"
            f"{scenario}-r{repeat}.log")


def publish_run_logs(config: Mapping[str, Any], runs: list[dict]) -> list[str]:
    """Fails when a run's manifest is missing (the load generator writes it last); returns uploaded keys."""
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    from sizing.layout import RunKey, manifest_key
    from sizing.storage import S3Settings

    hook = S3Hook(aws_conn_id=AWS_CONN_ID)
    bucket = S3Settings.from_env().bucket
    missing = [manifest_key(RunKey(**r)) for r in runs
               if not hook.check_for_key(manifest_key(RunKey(**r)), bucket_name=bucket)]
    if missing:
        raise RuntimeError(f"load runs finished but their manifests are missing in s3://{bucket}: {missing}")
    uploaded = []
    for r in runs:
        path = run_log_path(config, r["scenario"], r["repeat"])
        if path.exists():
            key = log_key(config, r["scenario"], r["repeat"])
            hook.load_file(str(path), key, bucket_name=bucket, replace=True)
            uploaded.append(key)
    return uploaded


def configs_with_complete_raw(configs: list[dict]) -> list[dict]:
    """The configs whose every (scenario, repeat) run has its manifest in S3."""
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    from rabbit_sizing.planning import scenario_runs
    from sizing.layout import RunKey, manifest_key
    from sizing.storage import S3Settings

    hook = S3Hook(aws_conn_id=AWS_CONN_ID)
    bucket = S3Settings.from_env().bucket
    return [c for c in configs
            if all(hook.check_for_key(manifest_key(RunKey(c["campaign"], c["config_id"], s, c["run_label"], r)),
                                      bucket_name=bucket) for s, r in scenario_runs(c))]
