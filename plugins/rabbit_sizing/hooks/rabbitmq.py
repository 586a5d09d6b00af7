"""RabbitMQ management API as an Airflow hook: is a freshly applied cluster ready for load?

The hook only wraps the one management client (adapters.management); the verdict is
sizing.resources.cluster.assess_health.
"""

from __future__ import annotations

from airflow.sdk import BaseHook

from adapters.management import ManagementClient
from sizing.resources.cluster import ClusterInfo, Health


class RabbitMQManagementHook(BaseHook):
    def __init__(self, cluster: ClusterInfo, timeout_s: float = 3.0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.client = ManagementClient(cluster, timeout_s)

    def health(self) -> Health:
        return self.client.health()
