"""The raw results in S3 as the tasks see them: clear stale ones before a trial, check every run landed after
it, publish the load generator's console logs (from the worker that ran the generator).

Through the object-store adapter (adapters.objectstore), the one client the load generator, the Spark jobs, the
report and its link use too: SIZING_S3_* and the AWS_* credentials of the worker. `aws_default` stays the ECS
connection (operators/loadgen.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from adapters.statepaths import state_paths
from sizing.contract.layout import run_log_key
from sizing.planning.plan import Trial

if TYPE_CHECKING:
    from adapters.objectstore import S3Store

AWS_CONN_ID = "aws_default"  # the connection the ECS load runs use


def raw_store() -> S3Store:
    """The bucket of the raw results (SIZING_S3_BUCKET)."""
    from adapters.objectstore import S3Settings

    return S3Settings.from_env().store()


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
    key = log_key(trial, scenario, repeat)
    raw_store().put(key, path.read_bytes())
    return key


def publish_run_logs(trial: Trial, runs: list[dict]) -> list[str]:
    """Fails when a run's manifest is missing (the load generator writes it last); returns the keys of the runs'
    console logs in the object store (run_scenarios put them there)."""
    from sizing.contract.layout import RunKey
    from sizing.contract.raw_layout import manifest_key

    store = raw_store()
    manifests = [manifest_key(RunKey(**r)) for r in runs]
    missing = [key for key in manifests if not store.exists(key)]
    if missing:
        raise RuntimeError(f"load runs finished but their manifests are missing in s3://{store.bucket}: {missing}")
    keys = [log_key(trial, r["scenario"], r["repeat"]) for r in runs]
    return [key for key in keys if store.exists(key)]


def configs_with_complete_raw(trials: list[Trial]) -> list[Trial]:
    """One trial per config whose every trial (repeat) has every run's manifest in S3, saying `complete`. The load
    generator writes its manifest when it starts (status `running`) and again at the end: a generator killed
    mid-run leaves a manifest that is not complete, and its partial records are not analysed."""
    import json

    from sizing.planning.runplan import complete_configs

    store = raw_store()

    def complete(key: str) -> bool:
        if not store.exists(key):
            return False
        return json.loads(store.get(key)).get("status") == "complete"

    return complete_configs(trials, complete)
