"""Issue 44: a local cluster as large as seed 002's deciding clusters (9 nodes, the most its port block holds but
one; seed 000's are 7) comes up through terraform/stacks/local as one cluster, and its destroy leaves no process,
port or file. Port slot 88 (ports 25400-25449) is this test's own.

How long it takes (2-core machine, installed 3.10, scale model off, 2026-11-28, two runs): apply 41.0 s and 40.6 s,
the one-cluster check 0.2 s, destroy 6.9 s and 6.8 s; 48 s in all. The nodes boot in parallel (Terraform's default
parallelism 10 > 9 nodes; a joiner waits for the seed only): the seed boots in 8 s, the eight joiners finish 21-35 s
after their start, together (one at a time they would take over a minute), then `cluster.sh form` 5 s. The destroy
is each node's graceful stop (about 6 s), all at once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from adapters.management import ManagementClient
from sizing.resources.cluster import ClusterInfo
from sizing.resources.localports import LOCAL_MAX_NODES, node_ports
from tests.fixtures.cluster import busy_ports

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

SLOT = 88
NODES = 9
assert NODES <= LOCAL_MAX_NODES


def processes_naming(text: str) -> list[int]:
    """Pids whose command line or environment names `text` (a node VM, a CLI VM, a shell of the scripts)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            found = any(text.encode() in (proc / part).read_bytes() for part in ("cmdline", "environ"))
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if found:
            pids.append(int(proc.name))
    return pids


def running_seen_by_each(cluster: ClusterInfo) -> dict[str, list[str]]:
    """Each node's own answer (management API /api/nodes): the nodes it sees running."""
    client = ManagementClient(cluster)
    return {node.name: sorted(n["name"] for n in client.request_node(node, "GET", "/api/nodes") if n["running"])
            for node in cluster.nodes}


def test_nine_node_local_cluster_is_one_cluster_and_goes_away_without_a_trace(local_cluster_factory):
    """Seed 002's 9-node cluster on one port block: up, one cluster, down with nothing left (timings: above)."""
    started = time.monotonic()
    local = local_cluster_factory(slot=SLOT, nodes=NODES)
    applied = time.monotonic()
    cluster = local.cluster
    base = local.plan.local_port_base
    names = sorted(n.name for n in cluster.nodes)
    assert names == sorted(f"rabbit-{base}-{n}@localhost" for n in range(1, NODES + 1))
    for n in range(1, NODES + 1):  # the ports sizing.resources.localports lays out, the last node's too
        ports = node_ports(base, n)
        assert (cluster.node(n).amqp_port, cluster.node(n).management_port) == (ports["amqp"], ports["management"])

    # One cluster: every node sees every node running (a node that joined nothing would see itself alone).
    deadline = time.monotonic() + 30
    while (seen := running_seen_by_each(cluster)) != dict.fromkeys(names, names) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert seen == dict.fromkeys(names, names)
    checked = time.monotonic()

    cluster_dir = local.stack.workspace.work_dir / cluster.cluster_name
    local.destroy()
    destroyed = time.monotonic()
    assert processes_naming(f"rabbit-{base}-") == []
    assert processes_naming(str(cluster_dir)) == []
    assert busy_ports(base) == []
    assert not cluster_dir.exists()
    print(f"{NODES}-node apply {applied - started:.1f}s, one-cluster check {checked - applied:.1f}s, "
          f"destroy {destroyed - checked:.1f}s")
