"""Management-API helpers for the fault tests (the clusters come from tests/fixtures/cluster.py), and their wait."""

from __future__ import annotations

import base64
import contextlib
import json
import time
import urllib.request
from urllib.parse import quote

from sizing.resources.cluster import ClusterInfo

FAULTS_SLOT = 20  # port block 22000: the 3-node cluster of test_faults_cluster
FAULTS_E2E_SLOT = 21  # port block 22050: test_faults_e2e's, which the second pass may run beside it (tests/README.md)


def mgmt(cluster: ClusterInfo, path: str, method: str = "GET", body: object = None, node: int = 1) -> object:
    url = cluster.node(node).management_url + path
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": "Basic " + base64.b64encode(f"{cluster.username}:{cluster.password}".encode()).decode(),
        "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        text = resp.read()
        return json.loads(text) if text else None


def declare_quorum_queue(cluster: ClusterInfo, name: str, leader_node: int = 1) -> None:
    vhost = quote(cluster.vhost, safe="")
    mgmt(cluster, f"/api/queues/{vhost}/{quote(name, safe='')}", "PUT",
         {"durable": True, "arguments": {"x-queue-type": "quorum", "x-quorum-initial-group-size": len(cluster.nodes)}},
         node=leader_node)


def delete_queue(cluster: ClusterInfo, name: str) -> None:
    with contextlib.suppress(Exception):
        mgmt(cluster, f"/api/queues/{quote(cluster.vhost, safe='')}/{quote(name, safe='')}", "DELETE")


def wait_for(predicate, timeout_s: float, what: str):
    """The predicate's first truthy value, polled every 0.5 s; AssertionError naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
