"""What a stood-up cluster looks like to everything after Terraform: the load generator, the fault
injector, the health check. Both Terraform stacks (local, aws) output one `cluster` object of this shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import quote

from sizing.resources.scalemodel import ClusterEnvelopes


@dataclass(frozen=True)
class NodeInfo:
    number: int  # 1-based
    name: str  # Erlang node name, e.g. rabbit-21000-1@localhost
    host: str
    amqp_port: int
    management_port: int
    prometheus_port: int | None = None
    dist_port: int | None = None
    # Local target: how to control the node's OS process (the fault injector uses these).
    pid_file: str | None = None  # holds the Erlang VM's OS pid
    data_dir: str | None = None
    start_cmd: tuple[str, ...] | None = None  # starts the node again (after a kill or stop)
    stop_cmd: tuple[str, ...] | None = None  # graceful stop
    ctl_cmd: tuple[str, ...] | None = None  # rabbitmqctl prefix addressing this node
    # AWS target: the EC2 instance (faults go through SSM Run Command).
    instance_id: str | None = None
    management_scheme: str = "http"  # an existing cluster's management endpoint may be https


    def amqp_uri(self, username: str, password: str, vhost: str = "/") -> str:
        user, secret = quote(username, safe=""), quote(password, safe="")  # a '/' in a password must be escaped too
        return f"amqp://{user}:{secret}@{self.host}:{self.amqp_port}/{quote(vhost, safe='')}"

    @property
    def management_url(self) -> str:
        return f"{self.management_scheme}://{self.host}:{self.management_port}"


@dataclass(frozen=True)
class ClusterNetwork:
    """A local cluster's private network (adapters/netns.py): node n in namespace rs-<slot>-<n> at 198.18.<slot>.<n>,
    its link limited to `mbit` Mbit/s each way (None: unlimited)."""

    slot: int
    mbit: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClusterNetwork:
        return cls(slot=int(data["slot"]), mbit=None if data.get("mbit") is None else float(data["mbit"]))


@dataclass(frozen=True)
class ClusterInfo:
    target: str  # "local" | "aws"
    cluster_name: str
    nodes: tuple[NodeInfo, ...]
    username: str = "guest"
    password: str = "guest"
    vhost: str = "/"
    ctl_env: Mapping[str, str] = field(default_factory=dict)  # environment for ctl_cmd (e.g. HOME with the cookie)
    # Local target: the directory holding the cluster's nodes, and the scale model's envelopes (None: scale_model off).
    # What the machine enforced of them is in the envelope records under cluster_dir (adapters/envelope.py).
    cluster_dir: str | None = None
    envelope: ClusterEnvelopes | None = None
    network: ClusterNetwork | None = None  # local target: None when every node is on the loopback

    @property
    def amqp_uris(self) -> list[str]:
        return [n.amqp_uri(self.username, self.password, self.vhost) for n in self.nodes]

    @property
    def management_urls(self) -> list[str]:
        return [n.management_url for n in self.nodes]

    def node(self, number: int) -> NodeInfo:
        for node in self.nodes:
            if node.number == number:
                return node
        raise KeyError(f"cluster {self.cluster_name} has no node {number} (nodes 1..{len(self.nodes)})")

    def node_named(self, name: str) -> NodeInfo:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"cluster {self.cluster_name} has no node named {name}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClusterInfo:
        def tup(value: Any) -> tuple[str, ...] | None:
            return tuple(value) if value is not None else None

        nodes = tuple(
            NodeInfo(**{**n, "start_cmd": tup(n.get("start_cmd")), "stop_cmd": tup(n.get("stop_cmd")),
                        "ctl_cmd": tup(n.get("ctl_cmd"))})
            for n in data["nodes"]
        )
        return cls(
            target=data["target"], cluster_name=data["cluster_name"], nodes=nodes,
            username=data.get("username", "guest"), password=data.get("password", "guest"),
            vhost=data.get("vhost", "/"), ctl_env=dict(data.get("ctl_env") or {}),
            cluster_dir=data.get("cluster_dir"),
            envelope=ClusterEnvelopes.from_dict(data["envelope"]) if data.get("envelope") else None,
            network=ClusterNetwork.from_dict(data["network"]) if data.get("network") else None,
        )

    @classmethod
    def from_terraform_outputs(cls, outputs: Mapping[str, Any]) -> ClusterInfo:
        """From `terraform output -json`: the stack's `cluster` output."""
        cluster = outputs["cluster"]
        return cls.from_dict(cluster.get("value", cluster))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ctl_env"] = dict(self.ctl_env)
        data["envelope"] = self.envelope.to_dict() if self.envelope else None
        data["network"] = self.network.to_dict() if self.network else None
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ClusterInfo:
        return cls.from_dict(json.loads(text))


# ------------------------------------------------------------------------------------ health verdicts


@dataclass(frozen=True)
class Health:
    healthy: bool
    reason: str


def unhealthy_nodes(cluster: ClusterInfo, api_nodes: Iterable[Mapping[str, Any]]) -> list[str]:
    """Names of the cluster's nodes that the management API's /api/nodes does not report running."""
    running = {n.get("name") for n in api_nodes if n.get("running")}
    return [node.name for node in cluster.nodes if node.name not in running]


def assess_health(cluster: ClusterInfo, nodes_seen: list[dict] | None, alarms_clear: bool) -> Health:
    """The verdict on one management API answer: every expected node running, clustered, no alarm."""
    if nodes_seen is None:
        return Health(False, "management API not answering yet")
    missing = unhealthy_nodes(cluster, nodes_seen)
    expected = len(cluster.nodes)
    if missing:
        return Health(False, f"{expected - len(missing)}/{expected} nodes running; waiting for {missing}")
    if not alarms_clear:
        return Health(False, "a resource alarm is raised")
    return Health(True, f"{expected} node(s) running and clustered")
