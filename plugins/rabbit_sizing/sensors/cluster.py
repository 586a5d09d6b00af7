"""Sensors of the per-trial task group: a free cluster slot, then a healthy cluster."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from airflow.sdk import BaseSensorOperator

from adapters.leases import LeaseBoard
from adapters.planning import owner_id, state_dir
from sizing.plan import Trial


def lease_board(deployment: str):  # -> LeaseBoard | StoreLeaseBoard
    """Where the cluster slots of a target live. `local`: files on this host (its clusters are processes of this
    host; the local target never runs on several workers). Any other target: the object store, so the cap holds
    whichever worker runs a trial's tasks (adapters/storeleases.py)."""
    from adapters.objectstore import S3Store, StoreSpec

    if deployment == "local":
        return LeaseBoard(state_dir() / "leases" / deployment)
    spec = StoreSpec.from_env()
    if spec.kind != "s3":  # a directory standing in for the bucket (benchmarks): one host, files will do
        return LeaseBoard(Path(spec.root or ".") / "leases" / deployment)
    from adapters.storeleases import StoreLeaseBoard, lease_ttl_s

    return StoreLeaseBoard(S3Store(spec), deployment, lease_ttl_s())


def release_slot(trial: Trial, dag_id: str, run_id: str) -> None:
    """Give back the cluster slot this trial of this run holds (a no-op when it holds none)."""
    lease_board(trial.deployment).release(owner_id(dag_id, run_id, trial.cluster_key))


@contextlib.contextmanager
def slot_kept(trial: Trial, dag_id: str, run_id: str) -> Iterator[None]:
    """While a task of the trial runs, keep its slot's lease alive (object-store leases expire unless renewed:
    a dead holder's slot is reclaimed); file leases need nothing."""
    board = lease_board(trial.deployment)
    if isinstance(board, LeaseBoard):
        yield
        return
    from adapters.storeleases import keep_alive

    with keep_alive(board, owner_id(dag_id, run_id, trial.cluster_key)):
        yield


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
        from rabbit_sizing.cluster_lifecycle import cluster_for_task
        from rabbit_sizing.hooks.rabbitmq import RabbitMQManagementHook

        trial = Trial.from_dict(self.trial)
        with slot_kept(trial, self.dag_id, context["run_id"]):  # renews the slot's lease at each poke
            health = RabbitMQManagementHook(cluster_for_task(trial, self.cluster)).health()
        self.log.info("%s: %s", trial.cluster_key, health.reason)
        return health.healthy
