"""The nemesis: injects a run's fault events at their scheduled times and heals them, recording both.

Jepsen's split: the timeline (sizing.planning.timeline.expand) says *when*, a FaultExecutor says *how* (local PIDs and
rabbitmqctl, or SSM on EC2), and this module runs the clock, resolves run-time targets (the leader of a
queue), and emits one event per fault start / heal / error in the records.EVENTS shape (minus the run key).
Whatever happens, `stop()` leaves no node dead and no alarm raised: every injected fault is healed.

    injector = FaultInjector(cluster, timeline.faults, emit=recorder.event, scenario_start=t0)
    injector.start(); ...; injector.stop(); injector.join()
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from loadgen.faults.base import SELF_HEALING, FaultError, FaultExecutor, NodeProbe
from sizing.planning.timeline import FaultEvent
from sizing.resources.cluster import ClusterInfo, NodeInfo

__all__ = ["FaultError", "FaultExecutor", "FaultInjector", "default_executor", "schedule"]

HEAL, INJECT = 0, 1  # at equal times heal first: a node healed at t is up before the next fault at t


def schedule(faults: Sequence[FaultEvent]) -> list[tuple[float, int, FaultEvent]]:
    """Every action in run order: (seconds after scenario start, HEAL | INJECT, fault)."""
    actions = [(f.at_s, INJECT, f) for f in faults]
    actions += [(f.heal_at_s, HEAL, f) for f in faults if f.heal_at_s is not None and f.kind not in SELF_HEALING]
    return sorted(actions, key=lambda a: (a[0], a[1], a[2].fault_id))


def default_executor(cluster: ClusterInfo, broker_config: Mapping[str, Any] | None = None) -> FaultExecutor:
    # an existing cluster's faults need `local: true` (sizing/resources/existing.py)
    if cluster.target in ("local", "existing"):
        from loadgen.faults.local import LocalFaultExecutor

        return LocalFaultExecutor(cluster, broker_config)
    if cluster.target == "aws":
        from adapters.ssm import ssm_client
        from loadgen.faults.ssm import SsmFaultExecutor

        return SsmFaultExecutor(cluster, ssm_client(), broker_config)  # the client from the edge, handed in
    raise FaultError(f"no fault executor for target {cluster.target!r}")


class FaultInjector:
    """Runs the fault schedule on a background thread.

    `emit` receives event dicts (ts, second, phase, kind, fault_id, fault_kind, node, detail); it is called
    from the injector's thread, so it must be thread-safe. `now` is the monotonic clock `scenario_start`
    was read from; `sleep` (tests) replaces the stop-aware wait; `phase_at(second) -> phase number` names
    the phase of heal events (default: the fault's own phase).
    """

    def __init__(self, cluster: ClusterInfo, faults: Sequence[FaultEvent], emit: Callable[[dict], None],
                 scenario_start: float, now: Callable[[], float] = time.monotonic,
                 executor: FaultExecutor | None = None, sleep: Callable[[float], Any] | None = None, *,
                 wall: Callable[[], float] = time.time, phase_at: Callable[[float], int] | None = None,
                 probe: NodeProbe | None = None, broker_config: Mapping[str, Any] | None = None,
                 tick_s: float = 0.5) -> None:
        self.cluster = cluster
        self.faults = tuple(faults)
        self.emit = emit
        self.scenario_start = scenario_start
        self.now = now
        self.executor = executor if executor is not None else default_executor(cluster, broker_config)
        self._stop = threading.Event()
        self._sleep = sleep if sleep is not None else self._stop.wait
        self.wall = wall
        self.phase_at = phase_at
        self._probe = probe
        self.tick_s = tick_s
        self._thread: threading.Thread | None = None
        self._active: dict[str, tuple[FaultEvent, NodeInfo | None]] = {}  # injected (or tried), not yet healed
        self.errors: list[str] = []

    # ----------------------------------------------------------------------------------------- control

    def start(self) -> FaultInjector:
        if self._thread is not None:
            raise RuntimeError("FaultInjector already started")
        self._thread = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop injecting; the thread heals whatever is still broken, then ends (see join)."""
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> FaultInjector:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.join()

    @property
    def outstanding(self) -> list[str]:
        """Fault ids injected but not healed yet."""
        return list(self._active)

    # ----------------------------------------------------------------------------------------- loop

    def run(self) -> None:
        """The schedule in the calling thread (start() runs this on a background thread)."""
        self._run()

    def _run(self) -> None:
        try:
            for due, action, fault in schedule(self.faults):
                if not self._wait_until(due):
                    break
                if action == INJECT:
                    self._inject(fault)
                elif fault.fault_id in self._active:
                    self._heal(fault, reason="scheduled")
            # A fault without a heal time lasts until the run stops, not until the schedule runs out (a client
            # latency set at second 0 was otherwise zeroed a few ms later, the schedule having nothing after it).
            while self._active and not self._stop.is_set():
                self._sleep(self.tick_s)
        finally:
            for fault_id in reversed(list(self._active)):
                self._heal(self._active[fault_id][0], reason="stop")

    def _wait_until(self, due_s: float) -> bool:
        while not self._stop.is_set():
            remaining = self.scenario_start + due_s - self.now()
            if remaining <= 0:
                return True
            self._sleep(min(remaining, self.tick_s))
        return False

    # ----------------------------------------------------------------------------------------- actions

    def _resolve(self, fault: FaultEvent) -> NodeInfo | None:
        if fault.target == "all":
            return None
        if fault.target == "leader":
            if not fault.queue:
                raise FaultError(f"{fault.fault_id}: target leader without a queue")
            return self.cluster.node_named(self.probe.queue_leader(fault.queue))
        if fault.node is None:
            raise FaultError(f"{fault.fault_id}: target node without a node number")
        return self.cluster.node(fault.node)

    @property
    def probe(self) -> NodeProbe:
        if self._probe is None:
            from loadgen.faults.probe import ManagementProbe

            self._probe = ManagementProbe(self.cluster)
        return self._probe

    def _inject(self, fault: FaultEvent) -> None:
        ts, second = self.wall(), self.now() - self.scenario_start
        try:
            node = self._resolve(fault)
        except (FaultError, KeyError) as err:
            self._event("fault_error", fault, None, ts, second, {"action": "inject", "error": str(err)})
            return
        self._active[fault.fault_id] = (fault, node)
        if fault.kind in SELF_HEALING:
            self._event("fault_start", fault, node, ts, second,
                        {"nodes": [n.name for n in sorted(self.cluster.nodes, key=lambda n: n.number)]})
        try:
            detail = self.executor.inject(fault, node)
        except Exception as err:  # any failure is recorded, and the heal still runs
            self._event("fault_error", fault, node, ts, second, {"action": "inject", "error": _why(err)})
            return
        if fault.kind in SELF_HEALING:
            self._active.pop(fault.fault_id, None)
            self._event("fault_heal", fault, node, self.wall(), self.now() - self.scenario_start,
                        {**detail, "started_at_s": round(second, 3)})
        else:
            self._event("fault_start", fault, node, ts, second,
                        {**detail, "scheduled_s": fault.at_s, "late_s": round(second - fault.at_s, 3)})

    def _heal(self, fault: FaultEvent, reason: str) -> None:
        _, node = self._active.pop(fault.fault_id)
        ts, second = self.wall(), self.now() - self.scenario_start
        try:
            detail = self.executor.heal(fault, node)
        except Exception as err:
            self._event("fault_error", fault, node, ts, second, {"action": "heal", "reason": reason,
                                                                  "error": _why(err)})
            return
        self._event("fault_heal", fault, node, ts, second,
                    {**detail, "reason": reason, "scheduled_s": fault.heal_at_s})

    def _event(self, kind: str, fault: FaultEvent, node: NodeInfo | None, ts: float, second: float,
               detail: Mapping[str, Any]) -> None:
        if kind == "fault_error":
            self.errors.append(f"{fault.fault_id} {detail.get('action')}: {detail.get('error')}")
        phase = fault.phase if self.phase_at is None or kind == "fault_start" else self.phase_at(second)
        self.emit({
            "ts": ts, "second": second, "phase": phase, "kind": kind, "fault_id": fault.fault_id,
            "fault_kind": fault.kind, "node": node.name if node else None,
            "detail": json.dumps(detail, sort_keys=True, default=str),
        })


def _why(err: BaseException) -> str:
    return str(err) if isinstance(err, FaultError) else f"{type(err).__name__}: {err}"
