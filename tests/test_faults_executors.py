"""Commands the executors build, as data: local argv lists, SSM scripts and send_command arguments."""

import uuid
from dataclasses import replace

import boto3
import pytest
from botocore.stub import Stubber

from loadgen.faults import commands
from loadgen.faults.base import FaultError
from loadgen.faults.local import LocalFaultExecutor, pid_alive
from loadgen.faults.probe import alarms_of, leader_of, quorum_queues_missing
from loadgen.faults.ssm import SsmFaultExecutor, send_command_args
from sizing.planning.timeline import FaultEvent
from sizing.resources.cluster import ClusterInfo, ClusterNetwork, NodeInfo

CTL = ("/usr/lib/rabbitmq/bin/rabbitmqctl", "-n", "rabbit-22000-1@localhost")
NODE = NodeInfo(1, "rabbit-22000-1@localhost", "127.0.0.1", 22000, 22001, ctl_cmd=CTL,
                start_cmd=("start-node", "1"), stop_cmd=("stop-node", "1"), pid_file="/nonexistent/pid")
LOCAL = ClusterInfo("local", "t", (NODE,), ctl_env={"HOME": "/tmp/cookie-home"})
AWS = ClusterInfo("aws", "t", tuple(
    NodeInfo(i, f"rabbit@ip-10-0-0-{i}", f"10.0.0.{i}", 5672, 15672, instance_id=f"i-0000000000000000{i}")
    for i in (1, 2, 3)))


def ev(kind, target="node", node=1, params=()):
    return FaultEvent("p01-f1", kind, 1, 10.0, 20.0, target, node, None, tuple(params))


# ------------------------------------------------------------------------------------------- commands


def test_alarm_commands_raise_and_restore_defaults():
    assert commands.memory_alarm_cmd(NODE, True, {}) == [*CTL, "set_vm_memory_high_watermark", "absolute", "1"]
    assert commands.memory_alarm_cmd(NODE, False, {}) == [*CTL, "set_vm_memory_high_watermark", "0.4"]
    assert commands.disk_alarm_cmd(NODE, True, {}) == [*CTL, "set_disk_free_limit", "1000000000000000"]
    assert commands.disk_alarm_cmd(NODE, False, {}) == [*CTL, "set_disk_free_limit", "50000000"]


def test_alarm_restore_follows_the_campaign_broker_config():
    assert commands.memory_watermark_restore({"vm_memory_high_watermark.relative": 0.6}) == ("0.6",)
    assert commands.memory_watermark_restore({"vm_memory_high_watermark.absolute": "2GB"}) == ("absolute", "2GB")
    assert commands.disk_free_limit_restore({"disk_free_limit.absolute": "1GB"}) == ("1GB",)
    assert commands.disk_free_limit_restore({"disk_free_limit.relative": 1.5}) == ("mem_relative", "1.5")


def test_quorum_wait_uses_rabbitmq_upgrade_of_the_same_install():
    assert commands.await_quorum_cmd(NODE, 60) == [
        "/usr/lib/rabbitmq/bin/rabbitmq-upgrade", "-n", "rabbit-22000-1@localhost", "-t", "60",
        "await_online_quorum_plus_one"]
    assert commands.sibling_cli(("ctl-wrapper", "-n", "x"), "rabbitmq-upgrade") is None


def test_missing_node_fields_are_clear_errors():
    bare = NodeInfo(1, "n@h", "h", 1, 2)
    with pytest.raises(FaultError, match="no ctl_cmd"):
        commands.memory_alarm_cmd(bare, True, {})


def test_netem_scripts():
    assert commands.netem_args("network_delay", {"delay_ms": 100}) == ["delay", "100ms"]
    assert commands.netem_args("network_delay", {"delay_ms": 50, "jitter_ms": 10}) == ["delay", "50ms", "10ms"]
    assert commands.netem_args("network_loss", {"loss_percent": 2.5}) == ["loss", "2.5%"]
    add = commands.ssm_netem_add_script("network_loss", {"loss_percent": 5, "interface": "eth0"})
    assert "IFACE=eth0" in add
    assert 'tc qdisc add dev "$IFACE" root netem loss 5%' in add
    auto = commands.ssm_netem_add_script("network_delay", {"delay_ms": 100})
    assert "IFACE=$(ip route show default | awk '{print $5; exit}')" in auto
    assert 'tc qdisc add dev "$IFACE" root netem delay 100ms' in auto
    assert 'tc qdisc del dev "$IFACE" root netem 2>/dev/null || true' in commands.ssm_netem_del_script({})


def test_ssm_kill_keeps_systemd_from_restarting_and_start_undoes_it():
    kill = commands.ssm_kill_script()
    assert any("Restart=no" in line and commands.NO_RESTART_DROPIN in line for line in kill)
    assert 'kill -9 "$pid"' in kill and "pid=$(pgrep -o -x beam.smp)" in kill
    start = commands.ssm_start_script(300)
    assert start.index(f"rm -f {commands.NO_RESTART_DROPIN}") < start.index("systemctl start rabbitmq-server")
    assert "rabbitmqctl -t 300 await_startup" in start


# ------------------------------------------------------------------------------------------- probe parsing


def test_probe_parsing():
    assert leader_of({"name": "q", "type": "quorum", "leader": "a@h", "node": "a@h"}) == "a@h"
    assert leader_of({"name": "q", "type": "classic", "node": "b@h"}) == "b@h"
    with pytest.raises(FaultError):
        leader_of({"name": "q"})
    assert alarms_of({"mem_alarm": True}) == {"mem_alarm": True, "disk_free_alarm": False}
    queues = [{"name": "q2", "type": "quorum", "members": ["a", "b"], "online": ["a"]},
              {"name": "q1", "type": "quorum", "members": ["a", "b"], "online": ["a", "b"]},
              {"name": "c", "type": "classic", "node": "b"}]
    assert quorum_queues_missing(queues, "b") == ["q2"]
    assert quorum_queues_missing(queues, "a") == []


# ------------------------------------------------------------------------------------------- local executor


def test_local_executor_refuses_network_faults_with_a_reason():
    """On the loopback nothing can be dropped between nodes; with namespaces, only tc netem's delay is missing."""
    ex = LocalFaultExecutor(LOCAL, run=lambda *a, **k: pytest.fail("must not run anything"))
    for kind, reason in (("network_delay", "needs the aws target"), ("network_loss", "network: namespaces"),
                         ("partition", "network: namespaces")):
        with pytest.raises(FaultError, match=reason):
            ex.inject(ev(kind, params=(("delay_ms", 10), ("loss_percent", 5))), NODE)
        with pytest.raises(FaultError, match=reason):
            ex.heal(ev(kind), NODE)
    namespaced = LocalFaultExecutor(replace(LOCAL, network=ClusterNetwork(slot=9)),
                                    run=lambda *a, **k: pytest.fail("must not run anything"))
    with pytest.raises(FaultError, match="needs the aws target"):
        namespaced.inject(ev("network_delay", params=(("delay_ms", 10),)), NODE)


def test_local_alarms_run_ctl_with_the_cluster_env():
    ran = []

    def run(argv, env, timeout_s):
        ran.append((argv, dict(env)))
        return "ok\n"

    ex = LocalFaultExecutor(LOCAL, broker_config={"vm_memory_high_watermark.relative": 0.5}, run=run)
    detail = ex.inject(ev("memory_alarm"), NODE)
    ex.heal(ev("memory_alarm"), NODE)
    assert detail == {"command": [*CTL, "set_vm_memory_high_watermark", "absolute", "1"], "output": "ok"}
    assert ran[1][0] == [*CTL, "set_vm_memory_high_watermark", "0.5"]
    assert all(env == {"HOME": "/tmp/cookie-home"} for _, env in ran)


def test_local_kill_of_a_node_that_is_not_running_fails():
    ex = LocalFaultExecutor(LOCAL, run=lambda *a, **k: "")
    with pytest.raises(FaultError, match="cannot read the pid"):
        ex.inject(ev("kill_node"), NODE)
    with pytest.raises(FaultError, match="needs a target node"):
        ex.inject(ev("memory_alarm", node=None), None)


def test_pid_alive():
    import os
    import subprocess

    assert pid_alive(os.getpid())
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert not pid_alive(proc.pid)


# ------------------------------------------------------------------------------------------- SSM executor


def test_send_command_arguments():
    args = send_command_args("i-1", ["set -eu", "echo hi"], "nemesis p01-f1 kill_node inject", 600)
    assert args == {
        "InstanceIds": ["i-1"], "DocumentName": "AWS-RunShellScript", "Comment": "nemesis p01-f1 kill_node inject",
        "TimeoutSeconds": 600, "Parameters": {"commands": ["set -eu", "echo hi"], "executionTimeout": ["600"]}}


def ssm_stubbed():
    client = boto3.client("ssm", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    return client, Stubber(client)


def expect(stub, instance, script, comment, statuses=("InProgress", "Success"), stderr=""):
    command_id = str(uuid.uuid5(uuid.NAMESPACE_URL, comment))  # SSM command ids are 36-character UUIDs
    stub.add_response("send_command", {"Command": {"CommandId": command_id}},
                      send_command_args(instance, script, comment, 600))
    stub.add_client_error("get_command_invocation", service_error_code="InvocationDoesNotExist",
                          expected_params={"CommandId": command_id, "InstanceId": instance})
    for status in statuses:
        stub.add_response("get_command_invocation",
                          {"CommandId": command_id, "InstanceId": instance, "Status": status,
                           "StandardOutputContent": "out", "StandardErrorContent": stderr},
                          {"CommandId": command_id, "InstanceId": instance})


def test_ssm_kill_and_heal_send_the_scripts_to_the_node_instance():
    client, stub = ssm_stubbed()
    node = AWS.node(2)
    expect(stub, node.instance_id, commands.ssm_kill_script(), "nemesis p01-f1 kill_node inject")
    expect(stub, node.instance_id, commands.ssm_start_script(), "nemesis p01-f1 kill_node heal")
    ex = SsmFaultExecutor(AWS, client, sleep=lambda s: None)
    with stub:
        detail = ex.inject(ev("kill_node", node=2), node)
        ex.heal(ev("kill_node", node=2), node)
        stub.assert_no_pending_responses()
    assert detail["instance_id"] == "i-00000000000000002" and len(detail["command_id"]) == 36


def test_ssm_alarms_and_netem():
    client, stub = ssm_stubbed()
    node = AWS.node(1)
    expect(stub, node.instance_id, ["set -eu", "rabbitmqctl set_vm_memory_high_watermark absolute 1"],
           "nemesis p01-f1 memory_alarm inject")
    expect(stub, node.instance_id, ["set -eu", "rabbitmqctl set_vm_memory_high_watermark 0.4"],
           "nemesis p01-f1 memory_alarm heal")
    params = (("delay_ms", 200),)
    expect(stub, node.instance_id, commands.ssm_netem_add_script("network_delay", dict(params)),
           "nemesis p01-f1 network_delay inject")
    expect(stub, node.instance_id, commands.ssm_netem_del_script(dict(params)), "nemesis p01-f1 network_delay heal")
    ex = SsmFaultExecutor(AWS, client, sleep=lambda s: None)
    with stub:
        ex.inject(ev("memory_alarm"), node)
        ex.heal(ev("memory_alarm"), node)
        ex.inject(ev("network_delay", params=params), node)
        ex.heal(ev("network_delay", params=params), node)
        stub.assert_no_pending_responses()


def test_a_partition_drops_every_peer_both_ways_and_its_heal_removes_only_its_rules():
    """Known answer: node 2 of three cut off from 10.0.0.1 and 10.0.0.3, in and out, each rule tagged; the heal deletes
    the tagged rules (iptables -S lists them as -A ..., deleted as -D ...) and fails if one is left."""
    script = commands.ssm_partition_script(["10.0.0.1", "10.0.0.3"])
    for peer in ("10.0.0.1", "10.0.0.3"):
        assert f"iptables -I INPUT -s {peer} -m comment --comment rabbit-sizing-partition -j DROP" in script
        assert f"iptables -I OUTPUT -d {peer} -m comment --comment rabbit-sizing-partition -j DROP" in script
    assert len([line for line in script if line.startswith("iptables -I")]) == 4 and script[0] == "set -eu"
    heal = commands.ssm_partition_heal_script()
    assert any("sed 's/^-A /-D /'" in line and "--comment rabbit-sizing-partition" in line for line in heal)
    assert heal[-1] == "! iptables -S | grep -q rabbit-sizing-partition"
    with pytest.raises(FaultError, match="at least one other node"):
        commands.ssm_partition_script([])


def test_a_one_way_partition_drops_one_direction_only():
    """Known answer: `from_node` drops only what node 2 sends to its peers (OUTPUT -d), `to_node` only what they send
    to it (INPUT -s); an unknown direction is refused before any rule is written."""
    peers = ["10.0.0.1", "10.0.0.3"]
    outbound = [line for line in commands.ssm_partition_script(peers, "from_node") if line.startswith("iptables -I")]
    inbound = [line for line in commands.ssm_partition_script(peers, "to_node") if line.startswith("iptables -I")]
    assert outbound == [f"iptables -I OUTPUT -d {peer} -m comment --comment rabbit-sizing-partition -j DROP"
                        for peer in peers]
    assert inbound == [f"iptables -I INPUT -s {peer} -m comment --comment rabbit-sizing-partition -j DROP"
                       for peer in peers]
    with pytest.raises(FaultError, match="direction"):
        commands.ssm_partition_script(peers, "sideways")


def test_the_local_partition_hands_netns_the_groups_its_direction_names(monkeypatch):
    """netns' one-way cut drops the first group's packets to the others (its own test sends them,
    tests/test_netns.py): `from_node` puts the target first, `to_node` last, `both` cuts both ways. Checked against
    the groups and flag netns.partition receives (recorded, nothing run; tests/test_netns.py cuts real
    namespaces through the executor)."""
    three = replace(LOCAL, network=ClusterNetwork(slot=9), nodes=tuple(
        replace(NODE, number=i, name=f"rabbit-22000-{i}@rs-9-{i}") for i in (1, 2, 3)))
    calls = []
    monkeypatch.setattr("loadgen.faults.local.netns.partition",
                        lambda groups, one_way=False: calls.append(
                            ([[n.number for n in g] for g in groups], one_way)) or {})
    ex = LocalFaultExecutor(three, run=lambda *a, **k: pytest.fail("must not run anything"))
    target = three.nodes[1]
    for params in ((), (("direction", "from_node"),), (("direction", "to_node"),)):
        ex.inject(ev("partition", node=2, params=params), target)
    assert calls == [([[2], [1, 3]], False), ([[2], [1, 3]], True), ([[1, 3], [2]], True)]


def test_ssm_partition_cuts_the_target_off_from_the_other_instances():
    client, stub = ssm_stubbed()
    node = AWS.node(2)
    expect(stub, node.instance_id, commands.ssm_partition_script(["10.0.0.1", "10.0.0.3"]),
           "nemesis p01-f1 partition inject")
    expect(stub, node.instance_id, commands.ssm_partition_heal_script(), "nemesis p01-f1 partition heal")
    ex = SsmFaultExecutor(AWS, client, sleep=lambda s: None)
    with stub:
        ex.inject(ev("partition", node=2), node)
        ex.heal(ev("partition", node=2), node)
        stub.assert_no_pending_responses()


def test_ssm_failure_raises_with_stderr():
    client, stub = ssm_stubbed()
    node = AWS.node(1)
    expect(stub, node.instance_id, ["set -eu", "rabbitmqctl set_disk_free_limit 1000000000000000"],
           "nemesis p01-f1 disk_alarm inject", statuses=("Failed",), stderr="Error: unable to perform an operation")
    ex = SsmFaultExecutor(AWS, client, sleep=lambda s: None)
    with stub, pytest.raises(FaultError, match="ended Failed: Error: unable to perform"):
        ex.inject(ev("disk_alarm"), node)


def test_ssm_rolling_restart_goes_node_by_node():
    client, stub = ssm_stubbed()
    for node in AWS.nodes:
        n = node.number
        expect(stub, node.instance_id, commands.ssm_stop_script(), f"nemesis p01-f1 stop {n}")
        expect(stub, node.instance_id, commands.ssm_start_script(), f"nemesis p01-f1 start {n}")
        expect(stub, node.instance_id, commands.ssm_await_quorum_script(120), f"nemesis p01-f1 quorum {n}")
    ex = SsmFaultExecutor(AWS, client, sleep=lambda s: None)
    with stub:
        detail = ex.inject(ev("rolling_restart", target="all", node=None), None)
        stub.assert_no_pending_responses()
    assert [s["node"] for s in detail["nodes"]] == [n.name for n in AWS.nodes]


def test_ssm_needs_instance_ids():
    client, _ = ssm_stubbed()
    with pytest.raises(FaultError, match="no instance_id"):
        SsmFaultExecutor(LOCAL, client).inject(ev("kill_node"), NODE)


def test_the_aws_executor_receives_its_ssm_client_from_the_adapter(monkeypatch):
    """Issue 47: the load generator makes no boto3 client; adapters.ssm does, and the executor is handed it."""
    import adapters.ssm
    from loadgen.nemesis import default_executor

    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    client = adapters.ssm.ssm_client()  # no network: a client is made, nothing is sent
    assert client.meta.service_model.service_name == "ssm" and client.meta.region_name == "eu-west-1"
    made = object()
    monkeypatch.setattr(adapters.ssm, "ssm_client", lambda: made)
    executor = default_executor(AWS)
    assert isinstance(executor, SsmFaultExecutor) and executor.ssm is made


def test_an_unregistered_invocation_is_none_and_other_aws_errors_raise():
    from botocore.exceptions import ClientError

    from adapters.ssm import command_invocation

    client, stub = ssm_stubbed()
    stub.add_client_error("get_command_invocation", service_error_code="InvocationDoesNotExist")
    stub.add_client_error("get_command_invocation", service_error_code="AccessDeniedException")
    with stub:
        assert command_invocation(client, "c" * 36, "i-1") is None
        with pytest.raises(ClientError, match="AccessDenied"):
            command_invocation(client, "c" * 36, "i-1")
