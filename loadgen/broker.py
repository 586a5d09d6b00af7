"""Broker-side edges: queue declaration before a run and broker sampling during it (the management API for memory,
alarms and queue depths; each node's exact counters, adapters.brokercounters, for message counts and rates).

Request building and response aggregation are pure functions (unit tested on recorded JSON); the thin
management client (adapters.management) tries every node in turn, because the node asked may be the one a
fault just killed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from adapters import brokercounters
from adapters.management import ManagementClient, ManagementError
from adapters.nodestats import NodeUnavailable
from sizing.campaign import QueueSpec
from sizing.resources.cluster import ClusterInfo
from sizing.resources.existing import POLICY_NAME

QUEUE_COLUMNS = "name,node,leader,type,messages,messages_ready,messages_unacknowledged"
NODE_COLUMNS = "name,running,mem_used,mem_limit,mem_alarm,disk_free,disk_free_alarm"


# ------------------------------------------------------------------------------------------ declaration


def queue_arguments(queues: QueueSpec) -> dict[str, Any]:
    """x-arguments for queue.declare: the spec's arguments plus x-queue-type (mirrored queues are classic)."""
    arguments = dict(queues.arguments)
    if queues.type in ("quorum", "stream"):
        arguments["x-queue-type"] = queues.type
    elif queues.type in ("classic", "mirrored"):
        arguments.setdefault("x-queue-type", "classic")
    return arguments


def policy_request(queues: QueueSpec, name: str = POLICY_NAME) -> tuple[str, dict[str, Any]] | None:
    """(management API path, body) of the policy the queues need, or None (only mirrored queues need one)."""
    if not queues.policy:
        return None
    names = "|".join(_regex_escape(n) for n in queues.names())
    body = {"pattern": f"^({names})$", "definition": dict(queues.policy), "apply-to": "queues", "priority": 10}
    return name, body


def _regex_escape(text: str) -> str:
    return "".join("\\" + ch if ch in r".^$*+?()[]{}|\-" else ch for ch in text)


def declare_queues(cluster: ClusterInfo, queues: QueueSpec, purge: bool = True) -> list[str]:
    """Declare (and empty) the workload's queues; returns their names. Mirrored queues get their policy first,
    so that they are mirrored from birth."""
    policy = policy_request(queues)
    if policy is not None:
        name, body = policy
        ManagementClient(cluster, timeout_s=5.0).put_policy(name, body)
    arguments = queue_arguments(queues)
    durable = queues.declared_durable
    # Queue n is declared through node n (round-robin): a queue's leader (a classic queue's master) is placed on the
    # declaring connection's node (`client-local`, the default), so one connection would put every leader on one
    # node, and that node alone would do every queue's leader work (the studies' clients were spread over nodes).
    connections: dict[int, Any] = {}
    try:
        names = queues.names()
        for index, name in enumerate(names):
            first = index % len(cluster.nodes)
            if first not in connections:
                connections[first] = _connect(cluster, first)
            channel = connections[first].channel()
            channel.queue_declare(name, durable=durable, arguments=arguments)
            if purge and queues.type != "stream":  # streams cannot be purged; the run nonce filters old messages
                channel.queue_purge(name)
            channel.close()
        return names
    finally:
        for connection in connections.values():
            connection.close()


def _connect(cluster: ClusterInfo, first: int = 0) -> Any:
    """A blocking AMQP connection to the first node from node index `first` on (in turn) that accepts one."""
    import pika

    refused: list[str] = []  # each node tried, with why: a node that died outside a fault is named
    nodes = list(cluster.nodes)
    for node in nodes[first:] + nodes[:first]:
        try:
            params = pika.ConnectionParameters(
                host=node.host, port=node.amqp_port, virtual_host=cluster.vhost,
                credentials=pika.PlainCredentials(cluster.username, cluster.password),
                connection_attempts=2, retry_delay=1, socket_timeout=10, blocked_connection_timeout=60)
            return pika.BlockingConnection(params)
        except Exception as err:
            refused.append(f"node {node.number} ({node.name} at {node.host}:{node.amqp_port}): {err!r}")
    raise RuntimeError("no node accepted an AMQP connection: " + "; ".join(refused))


def purge_queues(cluster: ClusterInfo, names: Sequence[str]) -> int:
    """Empty the named queues (between capacity-search probes); returns how many messages were purged."""
    connection = _connect(cluster)
    try:
        channel = connection.channel()
        return sum(int(channel.queue_purge(name).method.message_count) for name in names)
    finally:
        connection.close()


# ------------------------------------------------------------------------------------------ sampling


def aggregate_sample(nodes: Sequence[Mapping[str, Any]], queues: Sequence[Mapping[str, Any]],
                     known_nodes: Sequence[str]) -> list[dict[str, Any]]:
    """One BROKER_SAMPLES row (without run key and time) per node, queue figures summed by leader node."""
    by_name = {n.get("name"): n for n in nodes}
    rows = []
    for name in known_nodes:
        n = by_name.get(name, {})
        mine = [q for q in queues if (q.get("leader") or q.get("node")) == name]
        rows.append({
            "node": name,
            "running": bool(n.get("running", False)),
            "mem_used_bytes": _int_or_none(n.get("mem_used")),
            "mem_limit_bytes": _int_or_none(n.get("mem_limit")),
            "mem_alarm": bool(n.get("mem_alarm", False)),
            "disk_free_bytes": _int_or_none(n.get("disk_free")),
            "disk_alarm": bool(n.get("disk_free_alarm", False)),
            "queue_messages": sum(int(q.get("messages") or 0) for q in mine),
            "queue_messages_ready": sum(int(q.get("messages_ready") or 0) for q in mine),
            "queue_messages_unacked": sum(int(q.get("messages_unacknowledged") or 0) for q in mine),
        })
    return rows


def counter_fields(current: brokercounters.MessageCounts | None,
                   previous: tuple[float, brokercounters.MessageCounts] | None, at: float) -> dict[str, Any]:
    """A node's exact counters and its rates since its previous sample (null where they cannot be known: no answer,
    no previous sample, or a counter that went back because the node restarted)."""
    row: dict[str, Any] = {
        "messages_received": current.received if current else None,
        "messages_confirmed": current.confirmed if current else None,
        "messages_delivered": current.delivered if current else None,
        "messages_acknowledged": current.acknowledged if current else None,
        "publish_rate": None, "deliver_rate": None}
    if current is not None and previous is not None and at > previous[0]:
        delta = current.minus(previous[1])
        if delta is not None:
            row["publish_rate"] = delta.received / (at - previous[0])
            row["deliver_rate"] = delta.delivered / (at - previous[0])
    return row


def count_check(broker: brokercounters.MessageCounts | None, generator: Mapping[str, int], acks: bool,
                why_none: str = "") -> dict[str, Any]:
    """The run's broker-side counts (exact counters read before the workers started and after the drain) next to the
    generator's own: published = received, confirmed = confirmed, consumed = delivered (and = acknowledged when the
    consumers ack). `agrees` is None when the counts cannot be known (a node restarted: its counters reset)."""
    if broker is None:
        return {"source": brokercounters.SOURCE, "broker": None, "generator": dict(generator), "agrees": None,
                "differ": [], "why": why_none or "no counts"}
    pairs = [("published", "received"), ("confirmed", "confirmed"), ("consumed", "delivered")]
    pairs += [("consumed", "acknowledged")] if acks else []
    differ = [f"{mine} {int(generator.get(mine, 0))} != broker {theirs} {getattr(broker, theirs)}"
              for mine, theirs in pairs if int(generator.get(mine, 0)) != getattr(broker, theirs)]
    return {"source": brokercounters.SOURCE, "broker": broker.to_dict(), "generator": dict(generator),
            "agrees": not differ, "differ": differ}


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def fetch_sample(api: ManagementClient, queue_names: Sequence[str]) -> list[dict[str, Any]]:
    nodes = api.nodes(NODE_COLUMNS)
    queues = api.queues(QUEUE_COLUMNS)
    wanted = set(queue_names)
    return aggregate_sample(nodes, [q for q in queues if q.get("name") in wanted], [n.name for n in api.cluster.nodes])


def unreachable_sample(cluster: ClusterInfo) -> list[dict[str, Any]]:
    """What we record when no node answers: every node not running, no figures."""
    return aggregate_sample([], [], [n.name for n in cluster.nodes])


def rabbitmq_version(cluster: ClusterInfo) -> str | None:
    return ManagementClient(cluster, timeout_s=5.0).rabbitmq_version()


def broker_versions(cluster: ClusterInfo) -> dict[str, str | None]:
    """The running broker's RabbitMQ and Erlang versions (the run's manifest records them)."""
    return ManagementClient(cluster, timeout_s=5.0).versions()


class BrokerSampler(threading.Thread):
    """Samples the management API and each node's exact counters every `interval_s` and hands rows (with ts/second)
    to `emit`."""

    def __init__(self, cluster: ClusterInfo, queue_names: Sequence[str], emit: Callable[[dict[str, Any]], None],
                 scenario_start: float, start_epoch: float, interval_s: float = 5.0,
                 now: Callable[[], float] = time.monotonic) -> None:
        super().__init__(name="broker-sampler", daemon=True)
        self.cluster, self.queue_names, self.emit = cluster, list(queue_names), emit
        self.scenario_start, self.start_epoch, self.interval_s, self.now = scenario_start, start_epoch, interval_s, now
        self._stop_event = threading.Event()
        self.api = ManagementClient(cluster, timeout_s=min(3.0, interval_s))
        self._previous: dict[str, tuple[float, brokercounters.MessageCounts]] = {}
        self.errors = 0

    def run(self) -> None:
        while not self._stop_event.is_set():
            t = self.now()
            try:
                rows = fetch_sample(self.api, self.queue_names)
            except ManagementError:
                rows = unreachable_sample(self.cluster)
                self.errors += 1
            counts = self._counts()
            # Stamped at the response: a request held up by a frozen broker carries data from after the freeze.
            at = self.now()
            second = at - self.scenario_start
            for row in rows:
                node = row["node"]
                row.update(counter_fields(counts.get(node), self._previous.get(node), at))
                if counts.get(node) is not None:
                    self._previous[node] = (at, counts[node])
                else:
                    self._previous.pop(node, None)
                self.emit({"ts": self.start_epoch + second, "second": second, **row})
            self._stop_event.wait(max(0.0, self.interval_s - (self.now() - t)))

    def _counts(self) -> dict[str, brokercounters.MessageCounts | None]:
        out: dict[str, brokercounters.MessageCounts | None] = {}
        for node in self.cluster.nodes:
            try:
                out[node.name] = brokercounters.node_counts(node, timeout_s=min(3.0, self.interval_s))
            except (OSError, NodeUnavailable):
                out[node.name] = None
                self.errors += 1
        return out

    def stop(self) -> None:
        self._stop_event.set()
