"""Sensors of the per-trial task group: a free cluster slot, then a healthy cluster."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseSensorOperator

from adapters.leases import LeaseBoard
from adapters.planning import owner_id, state_dir
from sizing.plan import Trial


def lease_board(deployment: str) -> LeaseBoard:
    return LeaseBoard(state_dir() / "leases" / deployment)


def release_slot(trial: Trial, dag_id: str, run_id: str) -> None:
    """Give back the cluster slot this trial of this run holds (a no-op when it holds none)."""
    lease_board(trial.deployment).release(owner_id(dag_id, run_id, trial.cluster_key))


class ClusterSlotSensor(BaseSensorOperator):
    """Waits until fewer than the run's `max_parallel_configs` clusters are up, then holds a slot.

    Poke mode, and one waiting instance per run (max_active_tis_per_dagrun=1): a waiting sensor holds one
    worker slot, never more, so a lease holder always finds a worker. (Reschedule mode would free that slot,
    but Airflow 3.3's LocalExecutor raced on it here: a rescheduled instance re-queued before the executor
    reported the previous try, and the scheduler then failed it.)"""

    template_fields: Sequence[str] = ("trial",)

    def __init__(self, *, trial: Any, **kwargs) -> None:
        kwargs.setdefault("mode", "poke")
        kwargs.setdefault("poke_interval", 3)
        kwargs.setdefault("max_active_tis_per_dagrun", 1)
        super().__init__(**kwargs)
        self.trial = trial

    def poke(self, context) -> bool:
        trial = Trial.from_dict(self.trial)
        owner = owner_id(self.dag_id, context["run_id"], trial.cluster_key)
        board = lease_board(trial.deployment)
        slots = trial.max_parallel_configs
        lease = board.try_acquire(owner, slots)
        if lease is None:
            self.log.info("All %d cluster slot(s) busy: %s", slots, board.holders())
            return False
        self.log.info("Cluster slot %d taken for %s", lease.slot, owner)
        return True


class ClusterHealthySensor(BaseSensorOperator):
    """Pokes the management API until every node runs, is clustered and has no alarm."""

    template_fields: Sequence[str] = ("trial", "cluster")

    def __init__(self, *, trial: Any, cluster: Any, **kwargs) -> None:
        kwargs.setdefault("poke_interval", 2)
        kwargs.setdefault("timeout", 180)
        super().__init__(**kwargs)
        self.trial = trial  # names the cluster in the logs and the UI's map index
        self.cluster = cluster

    def poke(self, context) -> bool:
        from rabbit_sizing.cluster_lifecycle import load_cluster
        from rabbit_sizing.hooks.rabbitmq import RabbitMQManagementHook

        health = RabbitMQManagementHook(load_cluster(self.cluster)).health()
        self.log.info("%s: %s", Trial.from_dict(self.trial).cluster_key, health.reason)
        return health.healthy
