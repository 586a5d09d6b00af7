"""The nemesis' clock, ordering, events and heal-on-stop, with a fake clock and a recording executor."""

import json

import pytest

from loadgen.faults.base import FaultError
from loadgen.nemesis import HEAL, INJECT, FaultInjector, schedule
from sizing.contract.records import EVENTS, RUN_KEY
from sizing.planning.timeline import FaultEvent
from sizing.resources.cluster import ClusterInfo, NodeInfo

CLUSTER = ClusterInfo("local", "t", tuple(
    NodeInfo(i, f"rabbit-{i}@localhost", "127.0.0.1", 22000 + 10 * i, 22001 + 10 * i) for i in (1, 2, 3)))


def fault(fid, kind="kill_node", at=10.0, heal=20.0, target="node", node=2, queue=None, phase=1):
    return FaultEvent(fid, kind, phase, at, heal, target, node, queue)


class Clock:
    def __init__(self, t=100.0):
        self.t = t

    def now(self):
        return self.t

    def sleep(self, d):
        self.t += d


class Recorder:
    def __init__(self, clock, fail=(), on_inject=None):
        self.clock, self.fail, self.on_inject = clock, set(fail), on_inject
        self.calls = []

    def inject(self, f, node):
        self.calls.append(("inject", f.fault_id, node.name if node else None, self.clock.t))
        if self.on_inject:
            self.on_inject(f)
        if ("inject", f.fault_id) in self.fail:
            raise FaultError("boom")
        self.clock.t += 0.5  # the action takes time
        return {"did": "inject"}

    def heal(self, f, node):
        self.calls.append(("heal", f.fault_id, node.name if node else None, self.clock.t))
        if ("heal", f.fault_id) in self.fail:
            raise RuntimeError("heal failed")
        return {"did": "heal"}


class Probe:
    def queue_leader(self, queue):
        return {"q1": "rabbit-3@localhost"}[queue]

    def node_running(self, name):
        return True


def injector(faults, clock, executor, **kw):
    events = []
    inj = FaultInjector(CLUSTER, faults, events.append, scenario_start=100.0, now=clock.now, executor=executor,
                        sleep=clock.sleep, wall=lambda: 1_600_000_000.0 + clock.t, probe=Probe(), **kw)
    return inj, events


def test_schedule_orders_heals_before_injections_at_the_same_time():
    a, b = fault("p01-f1", at=10, heal=20), fault("p02-f1", at=20, heal=30)
    assert [(t, act, f.fault_id) for t, act, f in schedule([b, a])] == [
        (10, INJECT, "p01-f1"), (20, HEAL, "p01-f1"), (20, INJECT, "p02-f1"), (30, HEAL, "p02-f1")]
    # rolling restarts heal themselves: no separate heal action
    assert [act for _, act, _ in schedule([fault("x", kind="rolling_restart", heal=None, target="all")])] == [INJECT]


def test_faults_start_and_heal_on_time_with_full_event_rows():
    clock = Clock()
    ex = Recorder(clock)
    inj, events = injector([fault("p01-f1", at=10, heal=20)], clock, ex)
    inj.run()
    assert [(c[0], c[2], round(c[3] - 100, 3)) for c in ex.calls] == [
        ("inject", "rabbit-2@localhost", 10.0), ("heal", "rabbit-2@localhost", 20.0)]
    assert [e["kind"] for e in events] == ["fault_start", "fault_heal"]
    names = {c.name for c in EVENTS} - {c.name for c in RUN_KEY}
    for e in events:
        assert set(e) == names
        assert e["fault_id"] == "p01-f1" and e["fault_kind"] == "kill_node" and e["node"] == "rabbit-2@localhost"
        assert e["ts"] == pytest.approx(1_600_000_000.0 + 100 + e["second"])
    assert events[0]["second"] == pytest.approx(10.0)
    assert events[1]["second"] == pytest.approx(20.0)
    assert json.loads(events[0]["detail"]) == {"did": "inject", "scheduled_s": 10.0, "late_s": 0.0}
    assert json.loads(events[1]["detail"])["reason"] == "scheduled"
    assert inj.outstanding == []


def test_stop_heals_everything_still_broken_in_reverse_order():
    clock = Clock()
    inj = None

    def stop_after_second(f):
        if f.fault_id == "p01-f2":
            inj.stop()

    ex = Recorder(clock, on_inject=stop_after_second)
    faults = [fault("p01-f1", kind="memory_alarm", at=5, heal=500, node=1),
              fault("p01-f2", at=6, heal=600, node=2), fault("p01-f3", at=7, heal=700, node=3)]
    inj, events = injector(faults, clock, ex)
    inj.run()
    assert [(c[0], c[1]) for c in ex.calls] == [
        ("inject", "p01-f1"), ("inject", "p01-f2"), ("heal", "p01-f2"), ("heal", "p01-f1")]
    heals = [e for e in events if e["kind"] == "fault_heal"]
    assert [json.loads(e["detail"])["reason"] for e in heals] == ["stop", "stop"]
    assert inj.outstanding == []


def test_a_fault_without_a_heal_time_lasts_until_the_stop():
    clock = Clock()
    inj = None

    def sleep(d):
        clock.sleep(d)
        if clock.t >= 160:  # the run stops at second 60
            inj.stop()

    ex = Recorder(clock)
    events = []
    inj = FaultInjector(CLUSTER, [fault("p01-f1", kind="client_latency", at=0, heal=None, target="all", node=None)],
                        events.append, scenario_start=100.0, now=clock.now, executor=ex, sleep=sleep,
                        wall=lambda: 1_600_000_000.0 + clock.t, probe=Probe())
    inj.run()
    assert [(c[0], round(c[3] - 100)) for c in ex.calls] == [("inject", 0), ("heal", 60)]
    assert json.loads(events[-1]["detail"])["reason"] == "stop" and inj.outstanding == []


def test_failed_injection_is_recorded_and_still_healed():
    clock = Clock()
    ex = Recorder(clock, fail={("inject", "p01-f1")})
    inj, events = injector([fault("p01-f1", at=1, heal=2)], clock, ex)
    inj.run()
    assert [e["kind"] for e in events] == ["fault_error", "fault_heal"]
    assert json.loads(events[0]["detail"]) == {"action": "inject", "error": "boom"}
    assert inj.errors == ["p01-f1 inject: boom"]


def test_failed_heal_is_an_error_event_naming_the_action():
    clock = Clock()
    ex = Recorder(clock, fail={("heal", "p01-f1")})
    inj, events = injector([fault("p01-f1", at=1, heal=2)], clock, ex)
    inj.run()
    assert [e["kind"] for e in events] == ["fault_start", "fault_error"]
    assert json.loads(events[1]["detail"])["error"] == "RuntimeError: heal failed"


def test_leader_target_is_resolved_at_run_time_and_unknown_queue_is_an_error():
    clock = Clock()
    ex = Recorder(clock)
    faults = [fault("p01-f1", target="leader", node=None, queue="q1", at=1, heal=3),
              fault("p01-f2", target="leader", node=None, queue="nope", at=2, heal=4)]
    inj, events = injector(faults, clock, ex)
    inj.run()
    assert [(c[0], c[1], c[2]) for c in ex.calls] == [
        ("inject", "p01-f1", "rabbit-3@localhost"), ("heal", "p01-f1", "rabbit-3@localhost")]
    assert [(e["kind"], e["fault_id"]) for e in events] == [
        ("fault_start", "p01-f1"), ("fault_error", "p01-f2"), ("fault_heal", "p01-f1")]


def test_rolling_restart_emits_start_then_heal_around_one_call():
    clock = Clock()
    ex = Recorder(clock)
    inj, events = injector([fault("p02-f1", kind="rolling_restart", target="all", node=None, heal=None,
                                  at=30, phase=2)], clock, ex, phase_at=lambda s: 1 + int(s // 20))
    inj.run()
    assert [c[0] for c in ex.calls] == ["inject"]
    assert [e["kind"] for e in events] == ["fault_start", "fault_heal"]
    assert json.loads(events[0]["detail"])["nodes"] == [n.name for n in CLUSTER.nodes]
    assert events[1]["second"] == pytest.approx(30.5)
    assert [e["phase"] for e in events] == [2, 2]


def test_late_actions_run_at_once_and_say_how_late():
    clock = Clock(t=100.0 + 50)  # the injector starts after both faults were due
    ex = Recorder(clock)
    inj, events = injector([fault("p01-f1", at=10, heal=20)], clock, ex)
    inj.run()
    assert json.loads(events[0]["detail"])["late_s"] == pytest.approx(40.0)


def test_background_thread_stops_promptly_and_heals():
    import threading
    import time

    healed = threading.Event()

    class Slow:
        def inject(self, f, node):
            return {}

        def heal(self, f, node):
            healed.set()
            return {}

    events = []
    start = time.monotonic()
    inj = FaultInjector(CLUSTER, [fault("p01-f1", at=0.0, heal=3600.0)], events.append, scenario_start=start,
                        executor=Slow(), probe=Probe(), tick_s=0.05)
    inj.start()
    deadline = time.monotonic() + 5
    while not events and time.monotonic() < deadline:
        time.sleep(0.01)
    inj.stop()
    inj.join(timeout=5)
    assert healed.is_set()
    assert [e["kind"] for e in events] == ["fault_start", "fault_heal"]
