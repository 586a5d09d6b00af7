"""Every queue argument and broker_config value validation refuses, fed to a real RabbitMQ 3.10 node: the broker
would have refused it too, after a cluster was provisioned (issue 25, item 4). Port slot 69 (24450-24499).

Queue arguments: declared exactly as the load generator declares them (loadgen.broker.queue_arguments, pika), on a
1-node local cluster; the broker closes the channel with 406 PRECONDITION_FAILED, or pika cannot encode the value
at all (a float). The values validation accepts are declared too, and succeed. Two refusals are not the broker's,
and are shown for what they are: a name without the x- prefix (the broker accepts it and ignores it: a queue
"limited" by `max-length: 1` keeps every message) and an x-queue-type that contradicts `workload.queues.type`.

broker_config: a node started by rabbitmq-server itself with the value in its rabbitmq.conf, as the local module
writes it (`key = value`), stops at boot with failed_to_parse_configuration_file; the same key with a Latin-1 value
boots. Control characters are refused for another reason (a line break adds a rabbitmq.conf line the spec never
named; none is visible): tests/test_spec_broker_config.py.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pika
import pika.exceptions
import pytest
import yaml

from loadgen.broker import queue_arguments
from sizing.campaign import QueueSpec, parse_campaign
from sizing.campaign.brokerconf import check_broker_config
from sizing.campaign.queueargs import MAX_EXPIRY_MS, check_queue_arguments
from sizing.documents.fields import SpecError

pytestmark = pytest.mark.cluster

SLOT = 69
BOOT_PORT = 21000 + 50 * SLOT + 40  # the bare node of the broker_config cases, above the cluster's ports

REFUSED_BY_BROKER: list[tuple[str, dict[str, Any]]] = [
    ("classic", {"x-max-length": "1000"}),
    ("classic", {"x-max-length": -1}),
    ("classic", {"x-max-length-bytes": True}),
    ("classic", {"x-message-ttl": 1.5}),
    ("classic", {"x-message-ttl": MAX_EXPIRY_MS + 1}),
    ("classic", {"x-expires": 0}),
    ("classic", {"x-max-priority": 256}),
    ("classic", {"x-overflow": "drop-tail"}),
    ("classic", {"x-queue-mode": "eager"}),
    ("mirrored", {"x-queue-version": 3}),
    ("classic", {"x-single-active-consumer": "yes"}),
    ("classic", {"x-dead-letter-exchange": 5}),
    ("classic", {"x-dead-letter-routing-key": "dead"}),
    ("classic", {"x-delivery-limit": 5}),
    ("classic", {"x-queue-type": "fifo"}),
    ("quorum", {"x-max-priority": 10}),
    ("quorum", {"x-queue-mode": "lazy"}),
    ("quorum", {"x-quorum-initial-group-size": 0}),
    ("quorum", {"x-dead-letter-strategy": "sometimes"}),
    ("quorum", {"x-queue-leader-locator": "nearest"}),
    ("stream", {"x-max-length": 10}),
    ("stream", {"x-max-age": "7 days"}),
    ("stream", {"x-max-age": 7}),
    ("stream", {"x-initial-cluster-size": 0}),
]

ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("classic", {"x-max-length": 250000, "x-overflow": "reject-publish", "x-max-priority": 10,
                 "x-message-ttl": MAX_EXPIRY_MS, "x-single-active-consumer": True}),
    ("classic", {"x-queue-mode": "lazy", "x-queue-version": 2, "x-dead-letter-exchange": "dlx",
                 "x-dead-letter-routing-key": "dead", "x-expires": 3_600_000}),
    ("mirrored", {"x-queue-type": "classic", "x-queue-master-locator": "min-masters"}),
    ("quorum", {"x-quorum-initial-group-size": 3, "x-max-in-memory-length": 0, "x-delivery-limit": 5,
                "x-dead-letter-strategy": "at-most-once", "x-queue-leader-locator": "balanced"}),
    ("stream", {"x-max-age": "7D", "x-max-length-bytes": 10_000_000, "x-stream-max-segment-size-bytes": 1_000_000,
                "x-initial-cluster-size": 1}),
    ("classic", {"x-some-plugins-argument": ["any", "value"]}),  # unknown x- name: passed through
]


@pytest.fixture(scope="module")
def cluster(local_cluster_factory):
    return local_cluster_factory(slot=SLOT, nodes=1).cluster


def _spec(qtype: str, arguments: dict[str, Any], name: str) -> QueueSpec:
    policy = {"ha-mode": "all"} if qtype == "mirrored" else None
    return QueueSpec(count=1, name_pattern=name + "-{n}", type=qtype, durable=True, arguments=arguments, policy=policy)


def _connection(cluster) -> pika.BlockingConnection:
    node = cluster.nodes[0]
    return pika.BlockingConnection(pika.ConnectionParameters(
        host=node.host, port=node.amqp_port, credentials=pika.PlainCredentials(cluster.username, cluster.password)))


def _declare(connection: pika.BlockingConnection, queues: QueueSpec) -> str | None:
    """None when the broker declared the queue, else why it (or the client) refused."""
    channel = connection.channel()
    try:
        channel.queue_declare(queues.names()[0], durable=True, arguments=queue_arguments(queues))
    except pika.exceptions.ChannelClosedByBroker as err:
        return f"broker {err.reply_code}: {err.reply_text}"
    except pika.exceptions.UnsupportedAMQPFieldException:
        return "pika cannot encode it"
    channel.queue_delete(queues.names()[0])
    channel.close()
    return None


def test_every_refused_queue_argument_fails_at_the_broker_and_every_accepted_one_declares(cluster):
    connection = _connection(cluster)
    try:
        for i, (qtype, arguments) in enumerate(REFUSED_BY_BROKER):
            problems = check_queue_arguments(arguments, qtype, "workload.queues.arguments")
            assert len(problems) == 1, (qtype, arguments, problems)
            assert "other x- names are passed through unchecked" in problems[0].reason
            outcome = _declare(connection, _spec(qtype, arguments, f"refused-{i}"))
            assert outcome is not None, f"{qtype} {arguments}: validation refuses it, the broker declared it"
            assert outcome.startswith(("broker 406: PRECONDITION_FAILED", "pika cannot")), outcome
        for i, (qtype, arguments) in enumerate(ACCEPTED):
            assert check_queue_arguments(arguments, qtype, "workload.queues.arguments") == [], arguments
            assert _declare(connection, _spec(qtype, arguments, f"accepted-{i}")) is None, (qtype, arguments)
    finally:
        connection.close()


def test_the_refusals_that_are_not_the_brokers_say_why(cluster):
    # x-queue-type against the spec's type: the broker would declare a quorum queue the spec calls classic.
    [problem] = check_queue_arguments({"x-queue-type": "quorum"}, "classic", "workload.queues.arguments")
    assert "contradicts workload.queues.type" in problem.reason
    # A name without x-: refused because the broker ignores it. Shown: `max-length: 1` limits nothing.
    [problem] = check_queue_arguments({"max-length": 1}, "classic", "workload.queues.arguments")
    assert "would ignore" in problem.reason and "passed through unchecked" in problem.reason
    connection = _connection(cluster)
    try:
        channel = connection.channel()
        channel.confirm_delivery()  # each publish returns once the queue has the message
        channel.queue_declare("ignored-max-length", arguments={"max-length": 1})
        for n in range(3):
            channel.basic_publish("", "ignored-max-length", str(n).encode())
        assert channel.queue_declare("ignored-max-length", passive=True).method.message_count == 3
        channel.queue_delete("ignored-max-length")
    finally:
        connection.close()


def _boots(tmp_path: Path, conf_line: str, timeout_s: float = 60) -> tuple[bool, str]:
    """Start a bare node (rabbitmq-server, the local module's environment variables) with `conf_line` in its
    rabbitmq.conf; (booted, the end of its output). The node is killed as soon as it is up."""
    node_dir = tmp_path / f"node-{len(list(tmp_path.iterdir()))}"
    (node_dir / "home").mkdir(parents=True)
    (node_dir / "rabbitmq.conf").write_text(f"log.console = false\nlog.file.level = info\n{conf_line}\n",
                                            encoding="utf-8")
    (node_dir / "enabled_plugins").write_text("[].\n")
    env = {"PATH": "/usr/lib/rabbitmq/bin:/usr/sbin:/usr/bin:/bin", "HOME": str(node_dir / "home"), "LANG": "C.UTF-8",
           "RABBITMQ_NODENAME": f"refused{SLOT}@localhost", "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
           "RABBITMQ_NODE_PORT": str(BOOT_PORT), "RABBITMQ_DIST_PORT": str(BOOT_PORT + 1),
           "RABBITMQ_MNESIA_BASE": str(node_dir / "data"), "RABBITMQ_LOG_BASE": str(node_dir / "log"),
           "RABBITMQ_PID_FILE": str(node_dir / "rabbit.pid"), "RABBITMQ_CONFIG_FILE": str(node_dir / "rabbitmq.conf"),
           "RABBITMQ_ENABLED_PLUGINS_FILE": str(node_dir / "enabled_plugins"),
           "RABBITMQ_CONF_ENV_FILE": str(node_dir / "none.env")}
    out = node_dir / "stdout.log"
    with socket.socket() as probe:  # the previous node's port is free again
        deadline = time.monotonic() + 15
        while probe.connect_ex(("127.0.0.1", BOOT_PORT)) == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
    with open(out, "wb") as sink:
        node = subprocess.Popen(["rabbitmq-server"], env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=node_dir)  # a failed boot writes erl_crash.dump here
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if node.poll() is not None:
                return False, out.read_text(errors="replace")[-600:]
            if "Starting broker... completed" in out.read_text(errors="replace"):
                return True, ""
            time.sleep(0.2)
        raise AssertionError(f"node neither booted nor stopped within {timeout_s:.0f}s: {out.read_text()[-600:]}")
    finally:
        if node.poll() is None:
            os.killpg(node.pid, signal.SIGKILL)
        node.wait()


@pytest.mark.parametrize("value", ["a\u0101", "\u03a9mega", "\u65e5\u672c", "rabbit \U0001f407"])
def test_every_refused_broker_config_value_stops_a_real_node_at_boot(tmp_path, value):
    problems = check_broker_config({"cluster_name": value}, "local")
    assert len(problems) == 1 and "fails to start on a character beyond U+00FF" in problems[0].reason, problems
    booted, output = _boots(tmp_path, f"cluster_name = {value}")
    assert not booted and "failed_to_parse_configuration_file" in output, output


def test_a_latin1_value_is_accepted_and_boots(tmp_path):
    assert check_broker_config({"cluster_name": "caf\u00e9"}, "local") == []
    assert _boots(tmp_path, "cluster_name = caf\u00e9") == (True, "")


def test_a_queue_declared_again_as_another_type_is_refused_by_the_spec_and_by_the_broker(cluster):
    # What sizing.campaign.parse.redeclared_queues refuses, the broker would refuse mid-trial: local-quick's quorum
    # queues declared again as classic ones by its second scenario (known answer: the broker's 406 on the second
    # declaration)
    campaign = yaml.safe_load((Path(__file__).resolve().parent.parent / "campaigns" / "local-quick.yaml").read_text())
    campaign["scenarios"][1]["workload"] = {"queues": {"type": "classic", "arguments": {}}}
    with pytest.raises(SpecError) as refused:
        parse_campaign(campaign, source="test")
    assert [p.path for p in refused.value.problems] == ["scenarios[1].workload.queues.name_pattern"]
    pattern = campaign["workload"]["queues"]["name_pattern"].removesuffix("-{n}")
    quorum, classic = _spec("quorum", {}, pattern), _spec("classic", {}, pattern)
    connection = _connection(cluster)
    try:
        channel = connection.channel()
        channel.queue_declare(quorum.names()[0], durable=True, arguments=queue_arguments(quorum))
        channel.close()
        outcome = _declare(connection, classic)
        assert outcome is not None and outcome.startswith(
            "broker 406: PRECONDITION_FAILED - inequivalent arg 'x-queue-type'"), outcome
        assert _declare(connection, quorum) is None  # the same declaration again is accepted (and deletes it)
    finally:
        connection.close()
