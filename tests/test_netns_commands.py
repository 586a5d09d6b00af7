"""adapters/netns.py's pure half: the names, commands and plans it builds, and what it parses, without running any
(tests/test_netns.py runs them as root). Known answers written out by hand."""

from __future__ import annotations

import json

import pytest

from adapters import netns


def test_names_and_addresses_come_from_the_slot_and_fit_linuxs_interface_names():
    node = netns.NodeNet(254, 254)
    assert (node.namespace, node.veth, node.address) == ("rs-254-254", "rsv254-254", "198.18.254.254")
    assert len(node.veth) <= 15 and netns.VETH_RE.match(node.veth) and netns.NAMESPACE_RE.match(node.namespace)
    assert netns.slot_of("rs-12-3") == 12 and netns.slot_of("rsv12-3") == 12 and netns.slot_of("eth0") is None
    for cluster, number in ((0, 1), (1, 0), (255, 1)):  # slot 0 is the host's 198.18.0.x
        with pytest.raises(ValueError):
            netns.NodeNet(cluster, number)


def test_a_nodes_commands_build_its_namespace_link_table_and_envelope():
    commands = netns.node_commands(netns.NodeNet(3, 2, mbit=8), ipv6=False)
    assert commands[:2] == [["ip", "netns", "add", "rs-3-2"],
                            ["ip", "link", "add", "rsv3-2", "type", "veth", "peer", "name", "eth0", "netns", "rs-3-2"]]
    assert ["ip", "-n", "rs-3-2", "addr", "add", "198.18.3.2/16", "dev", "eth0"] in commands
    assert not any("default" in argv for argv in commands)  # no default route: nothing but 198.18/16 is reachable
    assert commands[-2][:8] == ["tc", "-n", "rs-3-2", "qdisc", "replace", "dev", "eth0", "root"]
    assert commands[-1][:6] == ["tc", "qdisc", "replace", "dev", "rsv3-2", "root"]
    assert netns.node_commands(netns.NodeNet(3, 2), ipv6=False)[-1][:5] == ["ip", "netns", "exec", "rs-3-2", "nft"]
    assert netns.network_commands(ipv6=False)[-1] == ["ip", "route", "replace", "blackhole", "198.18.0.0/15"]


def test_tbf_holds_10_ms_of_the_rate_and_at_least_eight_frames():
    assert netns.tbf_args(8) == ["tbf", "rate", "8000000bit", "burst", "12112", "latency", "50ms"]
    assert netns.tbf_args(1000)[4] == "1250000"
    with pytest.raises(ValueError):
        netns.tbf_args(0)


def test_partition_plans_drop_sources_at_the_receivers():
    a, b, c = (netns.NodeNet(1, n) for n in (1, 2, 3))
    assert netns.partition_plan([[a], [b, c]]) == {
        "rs-1-1": ["198.18.1.2", "198.18.1.3"], "rs-1-2": ["198.18.1.1"], "rs-1-3": ["198.18.1.1"]}
    assert netns.partition_plan([[a], [b, c]], one_way=True) == {
        "rs-1-1": [], "rs-1-2": ["198.18.1.1"], "rs-1-3": ["198.18.1.1"]}
    for groups in ([[a]], [[a], []], [[a], [a, b]]):
        with pytest.raises(ValueError):
            netns.partition_plan(groups)
    assert netns.cut_commands("rs-1-1", [])[0][-1] == "flush set inet rabbit_sizing cut"


def test_loss_is_a_random_drop_in_hundredths_of_a_percent():
    script = netns.loss_commands(netns.NodeNet(1, 1), 2.5)[0][-1]
    assert script.endswith("loss_out numgen random mod 10000 < 250 counter drop")
    assert netns.loss_commands(netns.NodeNet(1, 1), 0)[0][-1] == "flush chain inet rabbit_sizing loss_out"
    with pytest.raises(ValueError):
        netns.loss_commands(netns.NodeNet(1, 1), 101)


def test_what_it_parses():
    assert netns.node_counters({"rx_bytes": 1, "rx_packets": 2, "tx_bytes": 3, "tx_packets": 4}) == \
        netns.LinkCounters(rx_bytes=3, rx_packets=4, tx_bytes=1, tx_packets=2)
    assert netns.parse_netns_list("rs-1-1 (id: 0)\nother\n") == ["rs-1-1", "other"]
    assert netns.parse_link_names('[{"ifname": "rsv1-1"}]') == ["rsv1-1"] and netns.parse_link_names("") == []
    rule = {"family": "inet", "table": "rabbit_sizing"}
    listing = {"nftables": [{"metainfo": {}}, {"rule": {**rule, "chain": "input", "expr": [
        {"match": {}}, {"counter": {"packets": 7, "bytes": 400}}, {"drop": None}]}},
        {"rule": {**rule, "chain": "loss_out", "expr": [{"counter": {"packets": 5, "bytes": 300}}, {"drop": None}]}},
        {"rule": {**rule, "chain": "output", "expr": [{"jump": {"target": "loss_out"}}]}}]}
    assert netns.drop_counts(json.dumps(listing)) == {"partition": 7, "loss": 5}


def test_available_names_what_is_missing(monkeypatch):
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(netns.shutil, "which", lambda tool: None if tool == "nft" else f"/usr/sbin/{tool}")
    assert netns.available() == ("no private network for the nodes: not root; no `nft` (apt-get install nftables)")


def test_a_failed_command_is_named_with_its_stderr():
    with pytest.raises(netns.NetnsError, match=r"`sh -c 'echo oops >&2; exit 3'` failed \(exit 3\): oops"):
        netns.run(["sh", "-c", "echo oops >&2; exit 3"])


def test_every_namespace_of_a_cluster_names_every_node_of_it():
    """Short Erlang node names (rabbit-...@rs-4-2) resolve through the hosts file `ip netns exec` mounts."""
    nodes = [netns.NodeNet(4, n) for n in (1, 2)]
    assert netns.hosts_text(nodes) == "127.0.0.1\tlocalhost\n198.18.4.1\trs-4-1\n198.18.4.2\trs-4-2\n"


def test_a_port_slot_maps_to_a_network_slot_of_1_to_254():
    from adapters.terraform import network_slot

    assert [network_slot(s) for s in (0, 81, 253, 254, 308)] == [1, 82, 254, 1, 55]
    assert all(1 <= network_slot(s) <= 254 for s in range(2000))


def test_a_clusters_network_travels_with_its_description():
    from sizing.resources.cluster import ClusterInfo, ClusterNetwork, NodeInfo

    info = ClusterInfo("local", "c", (NodeInfo(1, "rabbit-1@rs-5-1", "198.18.5.1", 5672, 15672),),
                       network=ClusterNetwork(slot=5, mbit=62.5))
    assert ClusterInfo.from_json(info.to_json()) == info
    assert ClusterInfo.from_json(info.to_json()).network == ClusterNetwork(5, 62.5)
    assert ClusterInfo.from_dict({**info.to_dict(), "network": None}).network is None
