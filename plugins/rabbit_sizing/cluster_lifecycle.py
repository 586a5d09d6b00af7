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


def _hook(config: Mapping[str, Any]):
    from rabbit_sizing.hooks.terraform import TerraformHook  # branch infra

    return TerraformHook.for_config(config)


def provision(config: Mapping[str, Any]) -> ClusterInfo:
    """terraform apply; returns the stack's `cluster` output and writes it where the load generator reads it."""
    cluster = _hook(config).apply()
    path = cluster_json_path(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(cluster.to_json())
    return cluster


def deprovision(config: Mapping[str, Any]) -> None:
    _hook(config).destroy()
    cluster_json_path(config).unlink(missing_ok=True)


def load_cluster(value: Any) -> ClusterInfo:
    """A cluster as passed through XCom: a dict, a JSON string, or a ClusterInfo."""
    if isinstance(value, ClusterInfo):
        return value
    if isinstance(value, str):
        return ClusterInfo.from_dict(json.loads(value))
    return ClusterInfo.from_dict(value)
