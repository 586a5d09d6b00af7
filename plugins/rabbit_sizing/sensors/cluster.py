"""Sensors of the per-trial task group: a free cluster slot, then a healthy cluster."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from airflow.sdk import BaseSensorOperator

from adapters.leases import LeaseBoard
from adapters.statepaths import state_paths
from sizing.planning.plan import Trial
from sizing.planning.runplan import owner_id


def lease_board(deployment: str):  # -> LeaseBoard | StoreLeaseBoard
    """Where the cluster slots of a target live. `local`: files on this host (its clusters are processes of this
    host; the local target never runs on several workers). Any other target: the object store, so the cap holds
    whichever worker runs a trial's tasks (adapters/storeleases.py)."""
    from adapters.objectstore import S3Store, StoreSpec

    if deployment == "local":
        return LeaseBoard(state_paths().lease_board(deployment))
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
    reported the previous try, and the scheduler then failed it.)

    A slot held by a run that is no longer queued or running (it failed, was ended by the demo's clean-up, or is
    gone) is reclaimed: its holder died without giving it back. The wait is bounded by twice the campaign's planned
    wall time (sizing.planning.plan) plus ten minutes; past it the task fails naming who holds the slots."""

    template_fields: Sequence[str] = ("trial",)

    def __init__(self, *, trial: Any, **kwargs) -> None:
        kwargs.setdefault("mode", "poke")
        kwargs.setdefault("poke_interval", 3)
        kwargs.setdefault("max_active_tis_per_dagrun", 1)
        super().__init__(**kwargs)
        self.trial = trial
        self._waiting_since: float | None = None
        self._bound_s: float | None = None

    def poke(self, context) -> bool:
        import time

        from airflow.sdk.exceptions import AirflowFailException

        trial = Trial.from_dict(self.trial)
        owner = owner_id(self.dag_id, context["run_id"], trial.cluster_key)
        board = lease_board(trial.deployment)
        slots = trial.max_parallel_configs
        lease = board.try_acquire(owner, slots)
        if lease is None:
            for stale in board.reclaim(lambda holder: run_alive(context["ti"], holder)):
                self.log.warning("Reclaimed cluster slot %d from %s: its run is no longer running", stale.slot,
                                 stale.owner)
            lease = board.try_acquire(owner, slots)
        if lease is None:
            now = time.monotonic()
            self._waiting_since = self._waiting_since or now
            bound = self._bound_s = self._bound_s or slot_wait_bound_s(trial)
            holders = board.holders()
            self.log.info("All %d cluster slot(s) busy, waiting %.0f of at most %.0f s: %s", slots,
                          now - self._waiting_since, bound, holders)
            if now - self._waiting_since > bound:
                raise AirflowFailException(
                    f"no cluster slot came free within {bound:.0f}s (twice the campaign's planned wall time): held by "
                    f"{', '.join(holders.values()) or 'nobody'}; `make stop` ends stuck runs and frees their slots")
            return False
        self.log.info("Cluster slot %d taken for %s", lease.slot, owner)
        return True


def run_alive(ti: Any, owner: str) -> bool:
    """A lease owner (`dag/run/cluster`, adapters.planning.owner_id) is alive while its DAG run is queued or running.
    An owner that is not a DAG run's, or a state that cannot be read, counts as alive: never reclaim on a doubt."""
    dag_id, _, rest = owner.partition("/")
    run_id, _, _ = rest.rpartition("/")
    if not dag_id or not run_id:
        return True
    try:
        state = ti.get_dagrun_state(dag_id=dag_id, run_id=run_id)
    except Exception as err:  # a run that no longer exists answers 404
        return "404" not in str(err) and "not found" not in str(err).lower()
    return str(state).lower().rsplit(".", 1)[-1] in ("queued", "running")


def slot_wait_bound_s(trial: Trial) -> float:
    """Twice the campaign's planned wall time at the run's parallelism (planned with the trial: no spec is read
    here, on whichever worker this runs), plus ten minutes (at least 30 minutes)."""
    return max(1800.0, 2 * trial.planned_wall_s + 600)


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
