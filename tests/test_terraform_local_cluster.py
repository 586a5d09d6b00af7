"""Real RabbitMQ clusters through terraform/stacks/local (slots 0 and 1 of the infra area: ports 21000-21099)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pika
import pytest

from adapters.management import ManagementClient, wait_healthy
from sizing.cluster import ClusterInfo, NodeInfo
from tests.fixtures.cluster import busy_ports

pytestmark = pytest.mark.cluster

SLOT_3 = 0  # 21000-21049
SLOT_1 = 1  # 21050-21099


def ctl(cluster: ClusterInfo, node: NodeInfo, *args: str) -> str:
    assert node.ctl_cmd is not None
    result = subprocess.run([*node.ctl_cmd, *args], env={**os.environ, **cluster.ctl_env},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"{' '.join(args)} failed: {result.stderr}"
    return result.stdout


def running_nodes(cluster: ClusterInfo, node: NodeInfo) -> list[str]:
    return sorted(json.loads(ctl(cluster, node, "cluster_status", "--formatter", "json"))["running_nodes"])


def vm_pids_of(node_name_prefix: str) -> list[int]:
    """Erlang VMs whose environment names a node with this prefix (3.10 keeps the name off the command line)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "comm").read_text().strip() != "beam.smp":
                continue
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(e.startswith(f"RABBITMQ_NODENAME={node_name_prefix}".encode()) for e in environ):
            pids.append(int(proc.name))
    return pids


def test_three_node_cluster_lifecycle(local_cluster_factory):
    started = time.monotonic()
    local = local_cluster_factory(slot=SLOT_3, nodes=3)
    cluster = local.cluster
    names = sorted(n.name for n in cluster.nodes)
    assert names == ["rabbit-21000-1@localhost", "rabbit-21000-2@localhost", "rabbit-21000-3@localhost"]
    assert running_nodes(cluster, cluster.node(3)) == names

    for node in cluster.nodes:  # pid_file holds the Erlang VM's OS pid (the fault injector SIGKILLs it)
        pid = int(Path(node.pid_file).read_text().strip())
        assert Path(f"/proc/{pid}/comm").read_text().strip() == "beam.smp"
        assert Path(node.data_dir).is_dir()

    # A quorum queue declared through node 2 gets a member on every node.
    params = pika.URLParameters(cluster.node(2).amqp_uri(cluster.username, cluster.password, cluster.vhost))
    with pika.BlockingConnection(params) as connection:
        channel = connection.channel()
        channel.queue_declare("tf-quorum", durable=True, arguments={"x-queue-type": "quorum"})
        channel.basic_publish("", "tf-quorum", b"hello", pika.BasicProperties(delivery_mode=2))
    queues = json.loads(ctl(cluster, cluster.node(1), "list_queues", "name", "type", "members", "--formatter", "json"))
    queue = next(q for q in queues if q["name"] == "tf-quorum")
    assert queue["type"] == "quorum"
    assert sorted(queue["members"]) == names
    applied = time.monotonic()

    local.destroy()
    destroyed = time.monotonic()
    assert vm_pids_of("rabbit-21000-") == []
    assert not (local.stack.workspace.work_dir / cluster.cluster_name).exists()
    assert all(not Path(n.data_dir).exists() for n in cluster.nodes)
    assert busy_ports(21000) == []
    print(f"3-node apply+checks {applied - started:.1f}s, destroy {destroyed - applied:.1f}s")

    # A second apply after destroy starts a fresh cluster in the same slot.
    again = local_cluster_factory(slot=SLOT_3, nodes=3).cluster
    assert running_nodes(again, again.node(1)) == names
    assert "tf-quorum" not in ctl(again, again.node(1), "list_queues", "name")


def test_killed_node_restarts_and_rejoins(local_cluster_factory):
    cluster = local_cluster_factory(slot=SLOT_3, nodes=3).cluster
    node = cluster.node(2)
    pid = int(Path(node.pid_file).read_text().strip())
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert node.name not in running_nodes(cluster, cluster.node(1))

    assert node.start_cmd is not None
    subprocess.run(node.start_cmd, check=True, timeout=120, capture_output=True)
    new_pid = int(Path(node.pid_file).read_text().strip())
    assert new_pid != pid
    assert running_nodes(cluster, cluster.node(1)) == sorted(n.name for n in cluster.nodes)
    wait_healthy(cluster, timeout_s=30)


def test_two_clusters_coexist_on_their_own_ports(local_cluster_factory):
    three = local_cluster_factory(slot=SLOT_3, nodes=3).cluster
    one = local_cluster_factory(slot=SLOT_1, nodes=1, username="sizing", password="s3cret/pw").cluster
    assert one.node(1).amqp_port == 21050 and one.node(1).management_port == 21060
    assert running_nodes(one, one.node(1)) == ["rabbit-21050-1@localhost"]
    assert len(running_nodes(three, three.node(1))) == 3
    # The non-guest user exists with the password given (URL-quoted in the URI).
    with pika.BlockingConnection(pika.URLParameters(one.amqp_uris[0])) as connection:
        assert connection.is_open
    # Different cookies: one cluster's CLI cannot talk to the other's nodes.
    assert three.ctl_env["HOME"] != one.ctl_env["HOME"]


def test_memory_alarm_through_ctl_cmd(local_cluster_factory):
    """How the fault injector raises and clears a resource alarm on one local node."""
    cluster = local_cluster_factory(slot=SLOT_3, nodes=3).cluster
    node = cluster.node(3)

    def alarmed() -> bool:
        nodes = ManagementClient(cluster).request_node(cluster.node(1), "GET", "/api/nodes")
        return next(n for n in nodes if n["name"] == node.name)["mem_alarm"]

    ctl(cluster, node, "set_vm_memory_high_watermark", "0.0000001")
    deadline = time.monotonic() + 15
    while not alarmed() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert alarmed()
    ctl(cluster, node, "set_vm_memory_high_watermark", "0.4")
    deadline = time.monotonic() + 15
    while alarmed() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alarmed()
