"""Read-only questions to the cluster through the management HTTP API (any reachable node answers).

The parsing of each answer is a pure function; `ManagementProbe` asks through adapters.management.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from adapters.management import ManagementClient, ManagementError
from loadgen.faults.base import FaultError
from sizing.resources.cluster import ClusterInfo, NodeInfo


def leader_of(queue_json: Mapping[str, Any]) -> str:
    """The node hosting the queue's leader: `leader` for quorum/stream queues, `node` for classic ones."""
    name = queue_json.get("leader") or queue_json.get("node")
    if not name:
        raise FaultError(f"queue {queue_json.get('name')!r} reports neither a leader nor a node")
    return str(name)


def is_running(node_json: Mapping[str, Any]) -> bool:
    return bool(node_json.get("running"))


def alarms_of(node_json: Mapping[str, Any]) -> dict[str, bool]:
    return {"mem_alarm": bool(node_json.get("mem_alarm")), "disk_free_alarm": bool(node_json.get("disk_free_alarm"))}


def quorum_queues_missing(queues_json: Iterable[Mapping[str, Any]], node_name: str) -> list[str]:
    """Quorum queues that count `node_name` as a member but do not see it online yet."""
    return sorted(
        str(q.get("name")) for q in queues_json
        if q.get("type") == "quorum"
        and node_name in (q.get("members") or [])
        and node_name not in (q.get("online") or [])
    )


class ManagementProbe:
    """The fault injector's questions, asked through the one management client; failures become FaultError."""

    def __init__(self, cluster: ClusterInfo, timeout_s: float = 3.0) -> None:
        self.cluster = cluster
        self.api = ManagementClient(cluster, timeout_s)

    def get(self, path: str, avoid: str | None = None) -> Any:
        """GET from the first node that answers, trying `avoid` (a node being faulted) last."""
        try:
            return self.api.get(path, avoid=avoid)
        except ManagementError as err:
            raise FaultError(str(err)) from err

    def queue_leader(self, queue: str) -> str:
        return leader_of(self.get(f"/api/queues/{self.api.vhost_path}/{quote(queue, safe='')}"))

    def node_json(self, name: str, via_self: bool = True) -> Mapping[str, Any]:
        if via_self:
            return self.api.request_node(self.cluster.node_named(name), "GET", f"/api/nodes/{quote(name, safe='')}")
        return self.get(f"/api/nodes/{quote(name, safe='')}", avoid=name)

    def node_running(self, name: str) -> bool:
        """Running as seen by the rest of the cluster (and by the node itself when it is alone)."""
        try:
            return is_running(self.node_json(name, via_self=len(self.cluster.nodes) == 1))
        except (FaultError, OSError, ValueError):
            return False

    def alarms(self, name: str) -> dict[str, bool]:
        return alarms_of(self.node_json(name, via_self=False))

    def quorum_queues_missing(self, name: str) -> list[str]:
        queues = self.get(f"/api/queues/{self.api.vhost_path}?columns=name,type,members,online")
        return quorum_queues_missing(queues, name)


def amqp_port_open(node: NodeInfo, timeout_s: float = 1.0) -> bool:
    try:
        with socket.create_connection((node.host, node.amqp_port), timeout=timeout_s):
            return True
    except OSError:
        return False
