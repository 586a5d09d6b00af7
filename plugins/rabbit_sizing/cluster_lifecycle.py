"""Bring one config's cluster up and down through Terraform (the only place that knows TerraformHook).

The state of each cluster is keyed by campaign and config, so a destroy needs nothing from the apply
(it also works after a crash, from the config alone).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rabbit_sizing.planning import state_dir
from sizing.cluster import ClusterInfo


def cluster_json_path(config: Mapping[str, Any]) -> Path:
    return state_dir() / "clusters" / f"{config['campaign']}--{config['config_id']}.json"


def plan_and_campaign(config: Mapping[str, Any]):
    """The ConfigPlan (with the run's shifted slot) and Campaign a config dict stands for."""
    from dataclasses import replace

    from sizing.plan import plan_configs
    from sizing.spec import load_campaign

    campaign = load_campaign(config["spec_path"])
    (plan,) = plan_configs(campaign, [config["config_id"]])
    return replace(plan, slot=int(config["slot"])), campaign


def _hook(config: Mapping[str, Any]):
    """TerraformHook (plugins/rabbit_sizing/hooks/terraform.py) for the config's target; the connection
    `terraform_default` (state root, S3 backend for aws) is used when it exists."""
    from rabbit_sizing.hooks.terraform import TerraformHook

    conn_id = "terraform_default" if _has_connection("terraform_default") else None
    return TerraformHook(target=config["deployment"], terraform_conn_id=conn_id,
                         state_root=None if conn_id else state_dir() / "terraform")


def _has_connection(conn_id: str) -> bool:
    import os

    return f"AIRFLOW_CONN_{conn_id.upper()}" in os.environ


def provision(config: Mapping[str, Any]) -> ClusterInfo:
    """terraform apply; returns the stack's `cluster` output and writes it where the load generator reads it."""
    plan, campaign = plan_and_campaign(config)
    cluster = _hook(config).apply(plan, campaign)
    path = cluster_json_path(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(cluster.to_json())
    return cluster


def deprovision(config: Mapping[str, Any]) -> None:
    _hook(config).destroy(config["campaign"], config["config_id"])
    cluster_json_path(config).unlink(missing_ok=True)


def load_cluster(value: Any) -> ClusterInfo:
    """A cluster as passed through XCom: a dict, a JSON string, or a ClusterInfo."""
    if isinstance(value, ClusterInfo):
        return value
    if isinstance(value, str):
        return ClusterInfo.from_dict(json.loads(value))
    return ClusterInfo.from_dict(value)
