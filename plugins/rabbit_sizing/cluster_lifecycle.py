"""Bring one trial's cluster up and down: through Terraform (local, aws), or by attaching to a running cluster
and cleaning up after the campaign (existing). The only place that knows TerraformHook.

A trial (sizing.planning.plan.Trial) is one config and one repeat; each gets a fresh cluster (on `existing`, the same
running cluster, one trial after the other). Its state is keyed by campaign and cluster key, so a destroy needs
nothing from the apply (it also works after a crash, and on another worker: from the trial dict alone). What the
campaign says of the cluster comes with the trial (sizing.planning.trialcluster.ClusterRequest): no task here reads the
spec.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from adapters.statepaths import state_paths
from sizing.planning.plan import Trial
from sizing.resources.cluster import ClusterInfo
from sizing.resources.existing import CampaignObjects, ExistingCluster

EXISTING = "existing"


class AttachError(RuntimeError):
    """An existing cluster cannot take this campaign (unreachable, no such vhost, names already in use)."""


def cluster_json_path(trial: Trial) -> Path:
    return state_paths().clusters / f"{trial.campaign}--{trial.cluster_key}.json"


def _hook(trial: Trial):
    """TerraformHook (plugins/rabbit_sizing/hooks/terraform.py) for the trial's target; the connection
    `terraform_default` (state root, S3 backend for aws) is used when it exists."""
    from rabbit_sizing.hooks.terraform import TerraformHook

    conn_id = "terraform_default" if _has_connection("terraform_default") else None
    return TerraformHook(target=trial.deployment, terraform_conn_id=conn_id,
                         state_root=None if conn_id else state_paths().terraform)


def _has_connection(conn_id: str) -> bool:
    import os

    return f"AIRFLOW_CONN_{conn_id.upper()}" in os.environ


def provision(trial: Trial) -> ClusterInfo:
    """terraform apply (or, on `existing`, attach); returns the cluster (run_scenarios writes it where the load
    generator reads it). An existing cluster comes back without its password: that stays in its connection."""
    if trial.deployment == EXISTING:
        return replace(attach(trial), password="")
    return _hook(trial).apply(trial.config_plan, trial.cluster)


def deprovision(trial: Trial) -> list[str]:
    """terraform destroy (or, on `existing`, detach: returns what it deleted from the cluster)."""
    if trial.deployment == EXISTING:
        return detach(trial)
    hook = _hook(trial)
    if trial.deployment == "local":
        hook.destroy(trial.campaign, trial.cluster_key)
    else:  # remote state: the variables come from the trial, not from the apply's worker
        hook.destroy(trial.campaign, trial.cluster_key, plan=trial.config_plan, request=trial.cluster)
    cluster_json_path(trial).unlink(missing_ok=True)
    return []


def load_cluster(value: Any) -> ClusterInfo:
    """A cluster as passed through XCom: a dict, a JSON string, or a ClusterInfo."""
    if isinstance(value, ClusterInfo):
        return value
    if isinstance(value, str):
        return ClusterInfo.from_dict(json.loads(value))
    return ClusterInfo.from_dict(value)


def cluster_for_task(trial: Trial, value: Any) -> ClusterInfo:
    """The trial's cluster as a task uses it: on `existing`, with the credentials of its Airflow connection."""
    cluster = load_cluster(value)
    if trial.deployment != EXISTING:
        return cluster
    username, password = existing_credentials(_existing(trial)[0].connection)
    return replace(cluster, username=username, password=password)


# ------------------------------------------------------------------------------------------ existing


def existing_credentials(conn_id: str) -> tuple[str, str]:
    """(login, password) of the Airflow connection an existing cluster's spec names."""
    from airflow.sdk import BaseHook

    try:
        conn = BaseHook.get_connection(conn_id)
    except Exception as err:  # AirflowNotFoundException, whatever the secrets backend raises
        raise AttachError(f"the existing cluster's credentials come from the Airflow connection {conn_id!r}, which "
                          f"is not defined (add it in the UI or as AIRFLOW_CONN_{conn_id.upper()}): {err}") from err
    if not conn.login:
        raise AttachError(f"Airflow connection {conn_id!r} has no login for the existing cluster")
    return conn.login, conn.password or ""


def _existing(trial: Trial) -> tuple[ExistingCluster, CampaignObjects]:
    """The running cluster an `existing` trial measures and what the campaign declares there, from the trial."""
    existing, objects = trial.cluster.existing, trial.cluster.objects
    if existing is None or objects is None:
        raise AttachError(f"trial {trial.cluster_key} was planned without an existing cluster (deployment "
                          f"{trial.deployment})")
    return existing, objects


def attach(trial: Trial) -> ClusterInfo:
    """Check a running cluster can take the campaign and describe it: every management endpoint answers (and names
    its node), the vhost exists, and none of the queues or policies the campaign declares is there already: the
    load generator would purge it and teardown delete it, and it may be someone else's."""
    from adapters.management import ManagementClient, ManagementError

    existing, objects = _existing(trial)
    username, password = existing_credentials(existing.connection)
    name = f"existing-{trial.config_id}"
    bare = existing.cluster_info(name, username, password)
    client = ManagementClient(bare, timeout_s=10)
    try:
        names = [client.serving_node(node) for node in bare.nodes]
        cluster = existing.cluster_info(name, username, password, names)
        client = ManagementClient(cluster, timeout_s=10)
        if not client.vhost_exists():
            raise AttachError(f"vhost {existing.vhost!r} does not exist on the existing cluster: create it (the "
                              f"campaign's queues live there) or name another in existing.vhost")
        in_use = [f"queue {q}" for q in sorted(set(objects.queues) & set(client.names("queues")))]
        if objects.policies:  # listing policies needs the `policymaker` tag, which declaring them needs anyway
            in_use += [f"policy {p}" for p in sorted(set(objects.policies) & set(client.names("policies")))]
    except ManagementError as err:
        raise AttachError(f"the existing cluster's management API did not answer as user {username!r}: {err}") from err
    if in_use:
        raise AttachError(f"vhost {existing.vhost!r} already has {', '.join(in_use[:8])}"
                          f"{' ...' if len(in_use) > 8 else ''}: the campaign would purge and then delete them. "
                          f"Delete them if a crashed run of this campaign left them, or choose another "
                          f"workload.queues.name_pattern or existing.vhost")
    return cluster


def detach(trial: Trial) -> list[str]:
    """Leave the existing cluster as it was found: delete the queues, policies and exchanges the campaign declares
    (attach refused to start when any of them was there before). Returns what was deleted."""
    from adapters.management import ManagementClient

    existing, objects = _existing(trial)
    username, password = existing_credentials(existing.connection)
    client = ManagementClient(existing.cluster_info(f"existing-{trial.config_id}", username, password), timeout_s=10)
    deleted = []
    for kind, names in (("queues", objects.queues), ("policies", objects.policies),
                        ("exchanges", objects.exchanges)):
        deleted += [f"{kind[:-1] if kind != 'policies' else 'policy'} {n}" for n in names if client.delete(kind, n)]
    cluster_json_path(trial).unlink(missing_ok=True)
    return deleted
