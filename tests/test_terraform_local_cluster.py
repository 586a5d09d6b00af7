"""Real RabbitMQ clusters through terraform/stacks/local (slots 0 and 1 of the infra area: ports 21000-21099; the
4.0 runtime's twins: slots 90 and 91, ports 25500-25599).

The lifecycle tests here run on both local runtimes (`runtime` below: the installed 3.10 and the 4.0 root in a
chroot): they are the ones that go through every step runtime.sh changes (configure, a node's boot, rabbitmqctl
through ctl_cmd, a SIGKILL and start_cmd, destroy leaving no VM, no mount and no port; the alarms through ctl_cmd
on 4.0 are in tests/test_faults_cluster.py). The other cluster tests
run on the host runtime only: what they check is above the seam (load, counters, reports), not how a node runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pika
import pytest

from adapters.envelope import detect_support
from adapters.management import ManagementClient, wait_healthy
from adapters.rootfs import built_root
from adapters.terraform import LocalClusterStack, local_stack_variables, prepare_local_root
from sizing.campaign import load_campaign
from sizing.planning.runplan import config_request
from sizing.resources.cluster import ClusterInfo, NodeInfo
from sizing.resources.scalemodel import MIB
from tests.fixtures.cluster import busy_ports, cluster_plan

pytestmark = pytest.mark.cluster


@dataclass(frozen=True)
class Runtime:
    version: str | None  # what the config asks for; None = the installed package
    slot_3: int  # the 3-node cluster's slot
    slot_1: int

    @property
    def base_3(self) -> int:
        return 21000 + 50 * self.slot_3

    @property
    def base_1(self) -> int:
        return 21000 + 50 * self.slot_1

    def names(self) -> list[str]:
        return [f"rabbit-{self.base_3}-{i}@localhost" for i in (1, 2, 3)]


HOST = Runtime(None, slot_3=0, slot_1=1)  # 21000-21099
CHROOT = Runtime("4.0", slot_3=90, slot_1=91)  # 25500-25599


@pytest.fixture(params=[HOST, CHROOT], ids=["host-3.10", "chroot-4.0"])
def runtime(request) -> Runtime:
    return request.param


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


def mounts_below(path: Path | str) -> list[str]:
    return [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
            if line.split()[1] == str(path) or line.split()[1].startswith(f"{path}/")]


def test_three_node_cluster_lifecycle(local_cluster_factory, runtime):
    started = time.monotonic()
    local = local_cluster_factory(slot=runtime.slot_3, nodes=3, rabbitmq_version=runtime.version)
    cluster = local.cluster
    names = sorted(n.name for n in cluster.nodes)
    assert names == runtime.names()
    assert running_nodes(cluster, cluster.node(3)) == names
    # The version the nodes report (the management API: what `runs` records), against the runtime asked for.
    reported = ManagementClient(cluster).versions()
    assert reported["rabbitmq"].startswith("4.0." if runtime.version else "3.10."), reported
    assert reported["erlang"].startswith("27" if runtime.version else "25"), reported

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

    cluster_dir = local.stack.workspace.work_dir / cluster.cluster_name
    root = built_root() if runtime.version else None
    if root is not None:  # the nodes really run in the root, and see the cluster directory at its own path
        pid = int(Path(cluster.node(1).pid_file).read_text().strip())
        assert os.readlink(f"/proc/{pid}/root") == str(root)
        assert Path(f"/proc/{pid}/root{cluster.node(1).pid_file}").is_file()

    local.destroy()
    destroyed = time.monotonic()
    assert vm_pids_of(f"rabbit-{runtime.base_3}-") == []
    assert not cluster_dir.exists()
    assert all(not Path(n.data_dir).exists() for n in cluster.nodes)
    assert busy_ports(runtime.base_3) == []
    assert mounts_below(cluster_dir) == []
    if root is not None:  # no mount left in the shared root, nor this cluster's mount point
        assert mounts_below(root) == []
        assert not Path(f"{root}{cluster_dir}").exists()
        # ... nor any directory the root was built with (e.g. its /tmp, the mount point's parent).
        built_with = (root / ".rabbit-sizing-dirs").read_text().split()
        assert [d for d in built_with if not Path(f"{root}{d}").is_dir()] == []
    print(f"3-node apply+checks {applied - started:.1f}s, destroy {destroyed - applied:.1f}s")

    # A second apply after destroy starts a fresh cluster in the same slot.
    again = local_cluster_factory(slot=runtime.slot_3, nodes=3, rabbitmq_version=runtime.version).cluster
    assert running_nodes(again, again.node(1)) == names
    assert "tf-quorum" not in ctl(again, again.node(1), "list_queues", "name")


def test_killed_node_restarts_and_rejoins(local_cluster_factory, runtime):
    cluster = local_cluster_factory(slot=runtime.slot_3, nodes=3, rabbitmq_version=runtime.version).cluster
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
    """Also across runtimes: the 1-node cluster runs 4.0 in the root beside the installed 3.10's 3 nodes (one epmd
    serves both, runtime.sh)."""
    three = local_cluster_factory(slot=HOST.slot_3, nodes=3).cluster
    one = local_cluster_factory(slot=CHROOT.slot_1, nodes=1, username="sizing", password="s3cret/pw",
                                rabbitmq_version=CHROOT.version).cluster
    assert one.node(1).amqp_port == CHROOT.base_1 and one.node(1).management_port == CHROOT.base_1 + 10
    assert running_nodes(one, one.node(1)) == [f"rabbit-{CHROOT.base_1}-1@localhost"]
    assert len(running_nodes(three, three.node(1))) == 3
    # The non-guest user exists with the password given (URL-quoted in the URI).
    with pika.BlockingConnection(pika.URLParameters(one.amqp_uris[0])) as connection:
        assert connection.is_open
    # Different cookies: one cluster's CLI cannot talk to the other's nodes.
    assert three.ctl_env["HOME"] != one.ctl_env["HOME"]


def test_memory_alarm_through_ctl_cmd(local_cluster_factory):
    """How the fault injector raises and clears a resource alarm on one local node (on 4.0:
    tests/test_faults_cluster.py, both alarms through the executor)."""
    cluster = local_cluster_factory(slot=HOST.slot_3, nodes=3).cluster
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


def test_a_4_0_node_runs_in_the_scale_models_envelope(tmp_path):
    """The scale model's envelope holds on the chroot runtime too: runtime.sh enters the node's cgroups before the
    chroot, and the node's loop-mounted volume is seen inside it. Slot 95 (ports 25750-25799)."""
    support = detect_support()
    if not (support.enforced["cpu"] and support.enforced["memory"] and support.loops):
        pytest.skip(support.summary())
    campaign = load_campaign(Path(__file__).resolve().parents[1] / "campaigns" / "local-quick.yaml")
    plan = cluster_plan(95, 1, rabbitmq_version="4.0")
    envelopes = config_request(campaign, plan).envelopes
    assert envelopes is not None
    stack = LocalClusterStack(plan.campaign, plan.config_id, state_root=tmp_path)
    try:
        cluster = stack.up(local_stack_variables(plan, {}, stack.workspace.work_dir, envelopes=envelopes,
                                                 rootfs=prepare_local_root(plan)))
        node = cluster.nodes[0]
        pid = int(Path(node.pid_file).read_text().strip())
        assert os.readlink(f"/proc/{pid}/root") == str(built_root())
        # the VM is in every cgroup of its envelope (runtime.sh wrote its pid there before the chroot)
        env = (Path(node.data_dir).parent / "envelope.env").read_text()
        procs_files = env.split("ENVELOPE_PROCS='")[1].split("'")[0].split()
        assert procs_files and all(str(pid) in Path(f).read_text().split() for f in procs_files), procs_files
        mounts = {line.split()[4]: line.split(" - ")[1].split()[1] for line in
                  Path(f"/proc/{pid}/mountinfo").read_text().splitlines()}
        assert mounts[node.data_dir].startswith("/dev/loop")  # its data volume, inside the root at its own path
        # the broker's memory is the envelope's, not the machine's: 4.0's watermark (0.6 of the total it is told) is
        # the rule's, 4.0's idle footprint + 0.6 x the scaled RAM (sizing.resources.scalemodel.node_envelope)
        deadline = time.monotonic() + 20
        stats = ManagementClient(cluster).get("/api/nodes")[0]
        while "mem_limit" not in stats and time.monotonic() < deadline:
            time.sleep(0.5)
            stats = ManagementClient(cluster).get("/api/nodes")[0]
        scaled = envelopes.node.memory_bytes - envelopes.node.idle_bytes
        assert envelopes.node.idle_bytes == 140 * MIB
        assert stats["mem_limit"] == pytest.approx(140 * MIB + 0.6 * scaled, abs=2)
        cluster_dir = stack.workspace.work_dir / cluster.cluster_name
    finally:
        stack.destroy()
    assert mounts_below(tmp_path) == [] and mounts_below(built_root()) == []
    assert not cluster_dir.exists()
