"""Bring one trial's cluster up and down through Terraform (the only place that knows TerraformHook).

A trial (sizing.plan.Trial) is one config and one repeat; each gets a fresh cluster.
Its state is keyed by campaign and cluster key, so a destroy needs nothing from the apply (it also works
after a crash, from the trial dict alone).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from adapters.planning import state_dir
from sizing.cluster import ClusterInfo
from sizing.plan import Trial


def cluster_json_path(trial: Trial) -> Path:
    return state_dir() / "clusters" / f"{trial.campaign}--{trial.cluster_key}.json"


def plan_and_campaign(trial: Trial):
    """The ConfigPlan (with the trial's repeat and the run's shifted slot) and Campaign a trial stands for."""
    from dataclasses import replace

    from sizing.plan import plan_configs
    from sizing.spec import load_campaign

    campaign = load_campaign(trial.spec_path)
    (plan,) = plan_configs(campaign, [trial.config_id])
    return replace(plan, slot=trial.slot, repeat=trial.repeat), campaign


def _hook(trial: Trial):
    """TerraformHook (plugins/rabbit_sizing/hooks/terraform.py) for the trial's target; the connection
    `terraform_default` (state root, S3 backend for aws) is used when it exists."""
    from rabbit_sizing.hooks.terraform import TerraformHook

    conn_id = "terraform_default" if _has_connection("terraform_default") else None
    return TerraformHook(target=trial.deployment, terraform_conn_id=conn_id,
                         state_root=None if conn_id else state_dir() / "terraform")


def _has_connection(conn_id: str) -> bool:
    import os

    return f"AIRFLOW_CONN_{conn_id.upper()}" in os.environ


def provision(trial: Trial) -> ClusterInfo:
    """terraform apply; returns the stack's `cluster` output (run_scenarios writes it where the load
    generator reads it)."""
    plan, campaign = plan_and_campaign(trial)
    return _hook(trial).apply(plan, campaign)


def deprovision(trial: Trial) -> None:
    _hook(trial).destroy(trial.campaign, trial.cluster_key)
    cluster_json_path(trial).unlink(missing_ok=True)


def load_cluster(value: Any) -> ClusterInfo:
    """A cluster as passed through XCom: a dict, a JSON string, or a ClusterInfo."""
    if isinstance(value, ClusterInfo):
        return value
    if isinstance(value, str):
        return ClusterInfo.from_dict(json.loads(value))
    return ClusterInfo.from_dict(value)
