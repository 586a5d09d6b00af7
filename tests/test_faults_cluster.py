"""Executor-level fault tests on a real local 3-node cluster (no load generator needed).

The tests marked `on_both_runtimes` also run on the 4.0 runtime (the chroot, slot CHROOT_FAULTS_SLOT): they are the
ones whose fault goes through a node's own lifecycle scripts (SIGKILL and start_cmd, rabbitmqctl through ctl_cmd for
both alarms, stop_cmd/start_cmd with the quorum wait of a rolling restart). The injector's scheduling (leader
choice, healing at stop) sits above the node seam and is the same on both, so it runs on the host runtime only."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pika
import pytest

from loadgen.faults.local import LocalFaultExecutor, pid_alive, read_pid
from loadgen.faults.probe import ManagementProbe
from loadgen.nemesis import FaultInjector
from sizing.planning.timeline import FaultEvent
from tests.faults_support import FAULTS_SLOT, declare_quorum_queue, delete_queue, mgmt, wait_for

pytestmark = pytest.mark.cluster


CHROOT_FAULTS_SLOT = 92  # ports 25600-25649


@pytest.fixture(scope="module")
def cluster(local_cluster_factory, request):
    version = getattr(request, "param", None)
    return local_cluster_factory(slot=CHROOT_FAULTS_SLOT if version else FAULTS_SLOT, nodes=3,
                                 rabbitmq_version=version).cluster


on_both_runtimes = pytest.mark.parametrize("cluster", [None, "4.0"], ids=["host-3.10", "chroot-4.0"], indirect=True)


@pytest.fixture
def executor(cluster):
    return LocalFaultExecutor(cluster)


def running_nodes(cluster, via: int) -> set[str]:
    return {n["name"] for n in mgmt(cluster, "/api/nodes", node=via) if n.get("running")}


def event(kind, node=2, at=0.0, heal=1.0, target="node", queue=None):
    return FaultEvent("p01-f1", kind, 1, at, heal, target, node, queue)


@on_both_runtimes
def test_kill_then_heal_brings_the_node_back_into_the_cluster(cluster, executor):
    node = cluster.node(2)
    old_pid = read_pid(node)
    detail = executor.inject(event("kill_node"), node)
    assert detail["pid"] == old_pid and not pid_alive(old_pid)
    wait_for(lambda: node.name not in running_nodes(cluster, via=1), 30, "the cluster to see the node down")
    t0 = time.monotonic()
    healed = executor.heal(event("kill_node"), node)
    kill_to_running = time.monotonic() - t0
    assert healed["pid"] != old_pid and pid_alive(healed["pid"])
    names = {n.name for n in cluster.nodes}
    assert running_nodes(cluster, via=1) == names
    assert wait_for(lambda: running_nodes(cluster, via=2) == names, 30, "the restarted node to see its peers")
    print(f"\nkill -> running in cluster: {kill_to_running:.1f}s ({healed['running_after_s']}s)")
    # Healing a healthy node is a no-op that says so.
    assert executor.heal(event("kill_node"), node) == {"already_running": True}


@on_both_runtimes
def test_memory_and_disk_alarms_show_in_the_management_api(cluster, executor):
    node = cluster.node(3)
    probe = ManagementProbe(cluster)
    for kind, field in (("memory_alarm", "mem_alarm"), ("disk_alarm", "disk_free_alarm")):
        try:
            executor.inject(event(kind, node=3), node)
            wait_for(lambda f=field: probe.alarms(node.name)[f], 20, f"{field} raised")
        finally:
            executor.heal(event(kind, node=3), node)
        wait_for(lambda f=field: not probe.alarms(node.name)[f], 20, f"{field} cleared")
    limits = mgmt(cluster, f"/api/nodes/{node.name}")
    assert limits["disk_free_limit"] == 50_000_000  # the default put back (3.10's and 4.0's)


def test_injector_kills_the_leader_of_a_queue_and_heals_it(cluster):
    queue = "faults-leader-q"
    declare_quorum_queue(cluster, queue, leader_node=3)
    try:
        leader = wait_for(lambda: ManagementProbe(cluster).queue_leader(queue), 20, "a leader")
        events: list[dict] = []
        start = time.monotonic()
        fault = FaultEvent("p01-f1", "kill_node", 1, 0.5, 2.0, "leader", None, queue)
        injector = FaultInjector(cluster, [fault], events.append, scenario_start=start)
        injector.start()
        wait_for(lambda: len(events) >= 2, 120, "kill and heal events")
        injector.stop()
        injector.join(timeout=60)
    finally:
        delete_queue(cluster, queue)
    assert [e["kind"] for e in events] == ["fault_start", "fault_heal"]
    assert {e["node"] for e in events} == {leader}
    start_detail, heal_detail = (json.loads(e["detail"]) for e in events)
    assert start_detail["signal"] == "SIGKILL" and heal_detail["running_after_s"] > 0
    assert events[0]["second"] == pytest.approx(0.5, abs=0.5)
    assert injector.outstanding == [] and injector.errors == []
    assert running_nodes(cluster, via=1) == {n.name for n in cluster.nodes}


def test_stop_heals_a_fault_whose_heal_was_not_due_yet(cluster):
    events: list[dict] = []
    fault = FaultEvent("p01-f1", "memory_alarm", 1, 0.0, 3600.0, "node", 1, None)
    injector = FaultInjector(cluster, [fault], events.append, scenario_start=time.monotonic())
    injector.start()
    wait_for(lambda: events, 30, "the alarm to be raised")
    injector.stop()
    injector.join(timeout=60)
    assert [e["kind"] for e in events] == ["fault_start", "fault_heal"]
    assert json.loads(events[1]["detail"])["reason"] == "stop"
    wait_for(lambda: not ManagementProbe(cluster).alarms(cluster.node(1).name)["mem_alarm"], 20, "alarm cleared")


@on_both_runtimes
def test_rolling_restart_keeps_quorum_queue_messages(cluster, executor, tmp_path: Path):
    queue = "faults-rolling-q"
    declare_quorum_queue(cluster, queue)
    try:
        conn = pika.BlockingConnection(pika.URLParameters(cluster.amqp_uris[1]))
        ch = conn.channel()
        ch.confirm_delivery()
        for i in range(200):
            ch.basic_publish("", queue, str(i).encode(), pika.BasicProperties(delivery_mode=2))
        conn.close()
        t0 = time.monotonic()
        detail = executor.inject(event("rolling_restart", node=None, target="all", heal=None), None)
        duration = time.monotonic() - t0
        assert [s["node"] for s in detail["nodes"]] == [n.name for n in cluster.nodes]
        assert all("quorum_timeout" not in s for s in detail["nodes"]), detail
        assert running_nodes(cluster, via=1) == {n.name for n in cluster.nodes}
        conn = pika.BlockingConnection(pika.URLParameters(cluster.amqp_uris[0]))
        ch = conn.channel()
        body = [ch.basic_get(queue, auto_ack=True)[2] for _ in range(200)]
        assert sorted(int(b) for b in body) == list(range(200))
        assert ch.basic_get(queue, auto_ack=True)[0] is None
        conn.close()
        print(f"\nrolling restart of 3 nodes: {duration:.1f}s; per node: "
              + ", ".join(f"{s['step_s']:.1f}s" for s in detail["nodes"]))
    finally:
        delete_queue(cluster, queue)
