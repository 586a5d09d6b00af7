"""Generator-side faults: `client_latency` sets the latency proxies' delays (adapters.latencyproxy) at inject and
zeroes them at heal; every other kind goes to the target's own executor (local or SSM), made only when needed.

The proxies are in place before the workers connect (the runner routes the workers' connections through them), so a
delay can start and stop at any second of the run without a reconnect.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adapters.latencyproxy import ProxySet
from loadgen.faults.base import FaultError, FaultExecutor
from sizing.campaign import CLIENT_LATENCY
from sizing.planning.timeline import FaultEvent
from sizing.resources.cluster import ClusterInfo, NodeInfo


def delays_s(fault: FaultEvent) -> tuple[float, float]:
    """(to the broker, to the client) in seconds, from the fault's params in ms."""
    params = dict(fault.params)
    return float(params.get("to_broker_ms", 0.0)) / 1000, float(params.get("to_client_ms", 0.0)) / 1000


def proxied(cluster: ClusterInfo, ports: list[int], host: str = "127.0.0.1") -> ClusterInfo:
    """The cluster as the workers see it: every node's AMQP endpoint is its proxy's (management stays direct)."""
    from dataclasses import replace

    if len(ports) != len(cluster.nodes):
        raise FaultError(f"{len(ports)} proxies for {len(cluster.nodes)} nodes")
    return replace(cluster, nodes=tuple(replace(n, host=host, amqp_port=port)
                                        for n, port in zip(cluster.nodes, ports, strict=True)))


class ClientLatencyExecutor:
    def __init__(self, proxies: ProxySet, others: Callable[[], FaultExecutor]) -> None:
        self.proxies = proxies
        self._others = others
        self._other: FaultExecutor | None = None

    def other(self) -> FaultExecutor:
        if self._other is None:
            self._other = self._others()
        return self._other

    def inject(self, fault: FaultEvent, node: NodeInfo | None) -> dict[str, Any]:
        if fault.kind != CLIENT_LATENCY:
            return self.other().inject(fault, node)
        to_broker, to_client = delays_s(fault)
        self.proxies.set_delay(to_broker, to_client)
        return {"to_broker_ms": to_broker * 1000, "to_client_ms": to_client * 1000, "ports": self.proxies.ports}

    def heal(self, fault: FaultEvent, node: NodeInfo | None) -> dict[str, Any]:
        if fault.kind != CLIENT_LATENCY:
            return self.other().heal(fault, node)
        self.proxies.set_delay(0.0, 0.0)
        return {"to_broker_ms": 0.0, "to_client_ms": 0.0}
