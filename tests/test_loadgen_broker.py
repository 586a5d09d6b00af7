"""loadgen.broker's connection without a broker: a cluster none of whose nodes accepts an AMQP connection is refused
with every node named, its address and why (a node that died outside a fault is then found in the message). Known
answer: two ports on 127.0.0.1 that were bound and closed again, so nothing listens on them."""

from __future__ import annotations

import socket

import pytest

from loadgen.broker import _connect
from sizing.resources.cluster import ClusterInfo, NodeInfo


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_cluster_whose_nodes_all_refuse_names_each_node_and_its_port() -> None:
    ports = [closed_port(), closed_port()]
    nodes = tuple(NodeInfo(i + 1, f"rabbit-{i + 1}@localhost", "127.0.0.1", port, port + 1)
                  for i, port in enumerate(ports))
    with pytest.raises(RuntimeError) as refused:
        _connect(ClusterInfo("local", "c", nodes), first=1)
    message = str(refused.value)
    assert message.startswith("no node accepted an AMQP connection: node 2 ")  # from `first` on, in turn
    for number, port in ((1, ports[0]), (2, ports[1])):
        assert f"node {number} (rabbit-{number}@localhost at 127.0.0.1:{port}): " in message
    assert message.count("AMQPConnectionError") == 2
