"""The one RabbitMQ management-API client: used by the cluster health check (Terraform runner, Airflow sensor),
the load generator (queue policies, broker samples, version) and the fault injector (leaders, alarms, members).

Every call can be sent to any node; by default it tries each in turn, because the node asked may be the one a
fault just killed. What an answer means (health, leaders, alarms) is decided by pure functions of the parsed
JSON: `sizing.resources.cluster.assess_health` and the parsers next to their users.
"""

from __future__ import annotations

import base64
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from sizing.resources.cluster import ClusterInfo, Health, NodeInfo, assess_health, unhealthy_nodes

log = logging.getLogger(__name__)


class ManagementError(RuntimeError):
    """No node answered the request (each node's error is in the message)."""


class ManagementNotFound(ManagementError):
    """The API answered 404: the object (queue, node, vhost) does not exist. Not retried on other nodes."""


class ManagementClient:
    def __init__(self, cluster: ClusterInfo, timeout_s: float = 3.0) -> None:
        self.cluster = cluster
        self.timeout_s = timeout_s
        token = base64.b64encode(f"{cluster.username}:{cluster.password}".encode()).decode()
        self._auth = f"Basic {token}"

    @property
    def vhost_path(self) -> str:
        return quote(self.cluster.vhost, safe="")

    def request_node(self, node: NodeInfo, method: str, path: str, body: Any = None,
                     timeout_s: float | None = None) -> Any:
        """One call to one node; the parsed JSON answer (None for an empty body)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(node.management_url + path, data=data, method=method,
                                     headers={"Authorization": self._auth, "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout_s or self.timeout_s) as response:
            payload = response.read()
        return json.loads(payload) if payload else None

    def request(self, method: str, path: str, body: Any = None, *, avoid: str | None = None,
                nodes: Sequence[NodeInfo] | None = None, timeout_s: float | None = None) -> Any:
        """The first answer of `nodes` (default: every node, `avoid` last); ManagementError when none answers."""
        order = sorted(nodes or self.cluster.nodes, key=lambda n: n.name == avoid)
        errors = []
        for node in order:
            try:
                return self.request_node(node, method, path, body, timeout_s)
            except urllib.error.HTTPError as err:
                if err.code == 404:
                    raise ManagementNotFound(f"{method} {path}: not found (asked {node.name})") from err
                errors.append(f"{node.name}: HTTP {err.code}")
            except (OSError, ValueError) as err:  # refused, timed out, reset, unparsable
                errors.append(f"{node.name}: {err}")
        raise ManagementError(f"management API {method} {path} failed on every node: {'; '.join(errors)}")

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    # ---------------------------------------------------------------------------------- questions

    def nodes(self, columns: str | None = None, **kwargs: Any) -> list[dict[str, Any]]:
        return self.get("/api/nodes" + (f"?columns={columns}" if columns else ""), **kwargs)

    def node(self, name: str, via_self: bool = False) -> dict[str, Any]:
        """One node as the rest of the cluster sees it (or, with via_self, as it sees itself)."""
        path = f"/api/nodes/{quote(name, safe='')}"
        if via_self:
            return self.get(path, nodes=[self.cluster.node_named(name)])
        return self.get(path, avoid=name)

    def queues(self, columns: str | None = None, **kwargs: Any) -> list[dict[str, Any]]:
        return self.get(f"/api/queues/{self.vhost_path}" + (f"?columns={columns}" if columns else ""), **kwargs)

    def queue(self, name: str) -> dict[str, Any]:
        return self.get(f"/api/queues/{self.vhost_path}/{quote(name, safe='')}")

    def put_policy(self, name: str, body: dict[str, Any]) -> None:
        self.request("PUT", f"/api/policies/{self.vhost_path}/{quote(name, safe='')}", body)

    def serving_node(self, node: NodeInfo) -> str:
        """The Erlang name of the node behind one management endpoint (an existing cluster's spec gives endpoints).
        The overview names it only for users tagged `monitoring` (or `administrator`), whom /api/nodes (the health
        check) needs too."""
        overview = self.request_node(node, "GET", "/api/overview")
        if not isinstance(overview, dict) or not overview.get("node"):
            raise ManagementError(f"{node.management_url}/api/overview does not name its node: user "
                                  f"{self.cluster.username!r} needs the `monitoring` tag (the health check reads "
                                  f"/api/nodes)")
        return str(overview["node"])

    def vhost_exists(self) -> bool:
        """Through the vhost's queue list: what a user with permissions there may read (the vhost itself needs
        more than the `monitoring` tag)."""
        try:
            self.get(f"/api/queues/{self.vhost_path}?columns=name")
        except ManagementNotFound:
            return False
        return True

    def names(self, kind: str) -> list[str]:
        """Names of the vhost's `queues`, `policies` or `exchanges`."""
        return [item["name"] for item in self.get(f"/api/{kind}/{self.vhost_path}?columns=name")]

    def delete(self, kind: str, name: str) -> bool:
        """Delete one queue, policy or exchange of the vhost; False when it was not there."""
        try:
            self.request("DELETE", f"/api/{kind}/{self.vhost_path}/{quote(name, safe='')}")
        except ManagementNotFound:
            return False
        return True

    def rabbitmq_version(self) -> str | None:
        return self.versions().get("rabbitmq")

    def versions(self) -> dict[str, str | None]:
        """What the running broker reports of itself (/api/overview): its RabbitMQ and Erlang/OTP versions (None
        when it does not answer)."""
        try:
            overview = self.get("/api/overview")
        except ManagementError:
            return {"rabbitmq": None, "erlang": None}
        return {"rabbitmq": overview.get("rabbitmq_version"), "erlang": overview.get("erlang_version")}

    def alarms_clear(self, node: NodeInfo) -> bool:
        """The node's own health check: no resource alarm anywhere in the cluster (HTTP 200) or one (503)."""
        try:
            self.request_node(node, "GET", "/api/health/checks/alarms")
            return True
        except urllib.error.HTTPError:
            return False

    def health(self) -> Health:
        """Every expected node running and clustered, and no alarm; the first node that answers decides."""
        for node in self.cluster.nodes:  # the first one may be the node that is still booting
            try:
                seen = self.request_node(node, "GET", "/api/nodes")
                return assess_health(self.cluster, seen, self.alarms_clear(node))
            except (OSError, ValueError):
                continue
        return assess_health(self.cluster, None, False)


def wait_healthy(cluster: ClusterInfo, timeout_s: float = 60.0, interval_s: float = 0.5,
                 logger: logging.Logger | None = None) -> None:
    """Wait until EVERY node's management API answers and reports every node of the cluster running
    (stricter than `health()`: a node that has not joined yet sees only itself)."""
    logger = logger or log
    client = ManagementClient(cluster, timeout_s=5.0)
    deadline = time.monotonic() + timeout_s
    problem = "not checked yet"
    while True:
        try:
            for node in cluster.nodes:
                missing = unhealthy_nodes(cluster, client.request_node(node, "GET", "/api/nodes"))
                if missing:
                    raise ManagementError(f"{node.name} reports not running: {', '.join(missing)}")
            logger.info("cluster %s healthy: %d node(s) running", cluster.cluster_name, len(cluster.nodes))
            return
        except (OSError, ValueError, ManagementError) as exc:
            problem = str(exc)
        if time.monotonic() >= deadline:
            raise TimeoutError(f"cluster {cluster.cluster_name} not healthy after {timeout_s:.0f}s: {problem}")
        time.sleep(interval_s)
