"""The broker's exact message counters: each node's Prometheus endpoint, `rabbitmq_global_messages_*_total`.

Why not the management API: its overview and per-queue `message_stats` are aggregated by the management agent from
samples, and lose counts across a broker stall (STACK-NOTES, "Broker counters under a stall": 80,000 messages with
the node frozen 3 s came out ~5 % low there), while these counters (rabbit_global_counters, counted where the
message is received, confirmed, delivered and acknowledged) matched the generator exactly. Every broker-side count
the platform records or compares comes from here; the management API stays for what only it has (memory, alarms,
queue depths, per-queue figures, running nodes).

A counter belongs to the node whose channel counted it and restarts at 0 with the node: a cluster's count is the
sum over its nodes, and a difference across a node restart is not a count (`MessageCounts.minus` says so).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

from adapters import nodestats
from sizing.resources.cluster import ClusterInfo, NodeInfo

# MessageCounts field -> RabbitMQ 3.10 metric (summed over its protocol / queue_type labels).
GLOBAL_COUNTERS = {
    "received": "rabbitmq_global_messages_received_total",
    "confirmed": "rabbitmq_global_messages_confirmed_total",
    "routed": "rabbitmq_global_messages_routed_total",
    "delivered": "rabbitmq_global_messages_delivered_total",
    "redelivered": "rabbitmq_global_messages_redelivered_total",
    "acknowledged": "rabbitmq_global_messages_acknowledged_total",
}
SOURCE = "Prometheus rabbitmq_global_messages_*_total, summed over the cluster's nodes"


@dataclass(frozen=True)
class MessageCounts:
    received: int
    confirmed: int
    routed: int
    delivered: int
    redelivered: int
    acknowledged: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, int]) -> MessageCounts:
        return cls(**{f.name: int(data[f.name]) for f in fields(cls)})

    def plus(self, other: MessageCounts) -> MessageCounts:
        return MessageCounts(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def minus(self, earlier: MessageCounts) -> MessageCounts | None:
        """The counts between `earlier` and now, or None when a counter went back (the node restarted)."""
        delta = {f.name: getattr(self, f.name) - getattr(earlier, f.name) for f in fields(self)}
        return None if any(v < 0 for v in delta.values()) else MessageCounts(**delta)


def counts_from_metrics(metrics: nodestats.Metrics) -> MessageCounts:
    """One node's counters from its parsed /metrics; NodeUnavailable when the endpoint serves none of them."""
    values = {name: nodestats.metric_sum(metrics, metric) for name, metric in GLOBAL_COUNTERS.items()}
    missing = [GLOBAL_COUNTERS[name] for name, value in values.items() if value is None]
    if missing:
        raise nodestats.NodeUnavailable(f"no {', '.join(missing)} in the Prometheus answer")
    return MessageCounts(**{name: int(value) for name, value in values.items()})


def node_counts(node: NodeInfo, timeout_s: float = 3.0) -> MessageCounts:
    if not node.prometheus_port:
        raise nodestats.NodeUnavailable(f"node {node.name} has no Prometheus port")
    scrape = nodestats.http_scrape(f"http://{node.host}:{node.prometheus_port}/metrics", timeout_s)
    return counts_from_metrics(nodestats.parse_prometheus(scrape.text))


def cluster_counts(cluster: ClusterInfo, timeout_s: float = 3.0) -> dict[str, MessageCounts]:
    """{node name: its counters}; NodeUnavailable (naming the node) when one does not answer."""
    out = {}
    for node in cluster.nodes:
        try:
            out[node.name] = node_counts(node, timeout_s)
        except (OSError, nodestats.NodeUnavailable) as err:
            raise nodestats.NodeUnavailable(f"{node.name}: {err}") from err
    return out


def total(per_node: Mapping[str, MessageCounts]) -> MessageCounts:
    counts = list(per_node.values())
    result = counts[0]
    for more in counts[1:]:
        result = result.plus(more)
    return result


def counted_between(before: Mapping[str, MessageCounts], after: Mapping[str, MessageCounts]) -> MessageCounts | None:
    """The cluster's counts between two readings, or None when a node restarted in between (its counters reset) or
    the readings cover different nodes."""
    if set(before) != set(after):
        return None
    deltas = [after[name].minus(before[name]) for name in before]
    return None if any(d is None for d in deltas) else total({str(i): d for i, d in enumerate(deltas) if d})
