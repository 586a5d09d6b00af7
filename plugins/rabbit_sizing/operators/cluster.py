"""Terraform apply (the per-trial setup: a fresh cluster for one config and repeat) and destroy (its teardown)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator

from sizing.planning.plan import Trial


class ClusterApplyOperator(BaseOperator):
    """terraform apply for one trial; returns the `cluster` output (ClusterInfo as a dict) via XCom.

    A failed apply may leave half a cluster behind, and Airflow does not run a teardown whose setup
    failed, so this operator destroys what it made and gives the slot back before failing.
    """

    template_fields: Sequence[str] = ("trial",)

    def __init__(self, *, trial: Any, **kwargs) -> None:
        super().__init__(**kwargs)
        self.trial = trial

    def execute(self, context) -> dict:
        from rabbit_sizing import cluster_lifecycle
        from rabbit_sizing.sensors.cluster import release_slot, slot_kept

        trial = Trial.from_dict(self.trial)
        if trial.deployment == cluster_lifecycle.EXISTING:
            self.log.info("attach: %s, repeat %s of %s, on the existing cluster (no Terraform)", trial.config_id,
                          trial.repeat, trial.repeats)
        else:
            self.log.info("terraform apply: %s, repeat %s of %s (port base %s)", trial.config_id,
                          trial.repeat, trial.repeats, trial.local_port_base)
        try:
            with slot_kept(trial, self.dag_id, context["run_id"]):
                cluster = cluster_lifecycle.provision(trial)
        except BaseException:
            try:
                if trial.deployment != cluster_lifecycle.EXISTING:  # a refused attach created nothing to delete
                    self.log.exception("apply failed: destroying whatever was created")
                    cluster_lifecycle.deprovision(trial)
            finally:
                release_slot(trial, self.dag_id, context["run_id"])
            raise
        self.log.info("cluster %s up: %s", cluster.cluster_name,
                      ", ".join(f"{n.host}:{n.amqp_port}" for n in cluster.nodes))
        return cluster.to_dict()


class ClusterDestroyOperator(BaseOperator):
    """terraform destroy for one trial (needs only the trial dict: state is keyed by campaign and cluster
    key), then gives the cluster slot back, even when the destroy itself fails."""

    template_fields: Sequence[str] = ("trial",)

    def __init__(self, *, trial: Any, **kwargs) -> None:
        super().__init__(**kwargs)
        self.trial = trial

    def execute(self, context) -> None:
        from rabbit_sizing import cluster_lifecycle
        from rabbit_sizing.sensors.cluster import release_slot

        trial = Trial.from_dict(self.trial)
        if trial.deployment == cluster_lifecycle.EXISTING:
            self.log.info("detach: deleting what %s created on the existing cluster (it stays up)", trial.cluster_key)
        else:
            self.log.info("terraform destroy: %s", trial.cluster_key)
        try:
            removed = cluster_lifecycle.deprovision(trial)
            if trial.deployment == cluster_lifecycle.EXISTING:
                self.log.info("deleted from vhost: %s", ", ".join(removed) or "nothing (none of its names was there)")
        finally:
            release_slot(trial, self.dag_id, context["run_id"])
