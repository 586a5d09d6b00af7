"""RabbitMQ management API: is a freshly applied cluster ready for load?"""

from __future__ import annotations

from dataclasses import dataclass

from airflow.sdk import BaseHook

from adapters.terraform import unhealthy_nodes
from sizing.cluster import ClusterInfo


@dataclass(frozen=True)
class Health:
    healthy: bool
    reason: str


def assess(cluster: ClusterInfo, nodes_seen: list[dict] | None, alarms_ok: bool) -> Health:
    """Pure verdict from one management API answer: every expected node running, clustered, no alarm."""
    if nodes_seen is None:
        return Health(False, "management API not answering yet")
    missing = unhealthy_nodes(cluster, nodes_seen)
    expected = len(cluster.nodes)
    if missing:
        return Health(False, f"{expected - len(missing)}/{expected} nodes running; waiting for {missing}")
    if not alarms_ok:
        return Health(False, "a resource alarm is raised")
    return Health(True, f"{expected} node(s) running and clustered")


class RabbitMQManagementHook(BaseHook):
    def __init__(self, cluster: ClusterInfo, timeout_s: float = 3.0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.cluster = cluster
        self.timeout_s = timeout_s

    def _get(self, url: str):
        import requests

        return requests.get(url, auth=(self.cluster.username, self.cluster.password), timeout=self.timeout_s)

    def health(self) -> Health:
        import requests

        # Ask each node in turn: the first one may be the node that is still booting.
        for base in self.cluster.management_urls:
            try:
                nodes = self._get(f"{base}/api/nodes")
                if nodes.status_code != 200:
                    continue
                alarms = self._get(f"{base}/api/health/checks/alarms")
                return assess(self.cluster, nodes.json(), alarms.status_code == 200)
            except requests.RequestException:
                continue
        return assess(self.cluster, None, False)
