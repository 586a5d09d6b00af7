"""Pure builders of every command a fault runs: argv lists for the local target, shell scripts for SSM.

Nothing here runs anything, so every command is unit tested as data.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from loadgen.faults.base import FaultError
from sizing.campaign import (
    NAMESPACE_FAULTS,
    NETWORK_FAULTS,
    PARTITION,
    PARTITION_BOTH,
    PARTITION_DIRECTIONS,
    PARTITION_FROM_NODE,
    PARTITION_TO_NODE,
)
from sizing.resources.cluster import NodeInfo

# Limits that trip the alarms at once: a 1-byte memory watermark, and a free-disk floor of 1 PB.
MEMORY_ALARM_ARGS = ("absolute", "1")
DISK_ALARM_ARGS = ("1000000000000000",)
# RabbitMQ 3.10 defaults, restored when the campaign's broker_config does not set its own.
DEFAULT_MEMORY_WATERMARK = ("0.4",)
DEFAULT_DISK_FREE_LIMIT = ("50000000",)
# What the local executor refuses (the spec refuses it first: sizing.campaign.parse): the tc netem faults and the
# partition, declared once in sizing.campaign.model.
NETWORK_KINDS = (*NETWORK_FAULTS, PARTITION)
PARTITION_TAG = "rabbit-sizing-partition"  # the comment on every packet-filter rule a partition adds


def memory_watermark_restore(broker_config: Mapping[str, Any]) -> tuple[str, ...]:
    """`set_vm_memory_high_watermark` arguments that put back the configured watermark (rabbitmq.conf keys)."""
    if "vm_memory_high_watermark.relative" in broker_config:
        return (str(broker_config["vm_memory_high_watermark.relative"]),)
    if "vm_memory_high_watermark.absolute" in broker_config:
        return ("absolute", str(broker_config["vm_memory_high_watermark.absolute"]))
    return DEFAULT_MEMORY_WATERMARK


def disk_free_limit_restore(broker_config: Mapping[str, Any]) -> tuple[str, ...]:
    """`set_disk_free_limit` arguments that put back the configured limit."""
    if "disk_free_limit.absolute" in broker_config:
        return (str(broker_config["disk_free_limit.absolute"]),)
    if "disk_free_limit.relative" in broker_config:
        return ("mem_relative", str(broker_config["disk_free_limit.relative"]))
    return DEFAULT_DISK_FREE_LIMIT


def require(node: NodeInfo, field: str) -> tuple[str, ...]:
    value = getattr(node, field)
    if not value:
        raise FaultError(f"node {node.name} has no {field}; the cluster description cannot drive local faults")
    return tuple(value)


def memory_alarm_cmd(node: NodeInfo, raise_alarm: bool, broker_config: Mapping[str, Any]) -> list[str]:
    args = MEMORY_ALARM_ARGS if raise_alarm else memory_watermark_restore(broker_config)
    return [*require(node, "ctl_cmd"), "set_vm_memory_high_watermark", *args]


def disk_alarm_cmd(node: NodeInfo, raise_alarm: bool, broker_config: Mapping[str, Any]) -> list[str]:
    args = DISK_ALARM_ARGS if raise_alarm else disk_free_limit_restore(broker_config)
    return [*require(node, "ctl_cmd"), "set_disk_free_limit", *args]


def sibling_cli(ctl_cmd: tuple[str, ...], tool: str) -> list[str] | None:
    """The same prefix with `rabbitmqctl` swapped for another CLI of the same install (e.g. rabbitmq-upgrade)."""
    for i, part in enumerate(ctl_cmd):
        if PurePosixPath(part).name == "rabbitmqctl":
            return [*ctl_cmd[:i], str(PurePosixPath(part).with_name(tool)), *ctl_cmd[i + 1:]]
    return None


def await_quorum_cmd(node: NodeInfo, timeout_s: float) -> list[str] | None:
    """Waits until every quorum queue has quorum + 1 members online (safe to stop the next node)."""
    upgrade = sibling_cli(require(node, "ctl_cmd"), "rabbitmq-upgrade")
    return None if upgrade is None else [*upgrade, "-t", str(int(timeout_s)), "await_online_quorum_plus_one"]


def local_network_refusal(kind: str) -> str:
    if kind in NAMESPACE_FAULTS:
        return (f"{kind} needs a namespace per node (`network: namespaces`, adapters/netns.py): this cluster's nodes "
                f"share one loopback interface with the load generator")
    return (f"{kind} needs the aws target: this kernel has no tc netem, and the local target's nodes share one "
            f"machine")


# ------------------------------------------------------------------------------------------- SSM scripts
# Run by AWS-RunShellScript as root on the node's instance (Debian/Ubuntu or Amazon Linux with the
# rabbitmq-server systemd unit). Each script fails (non-zero) when the fault did not take effect.

SERVICE = "rabbitmq-server"
# While a node is "killed", systemd must not restart it behind our back (Restart=on-failure in the unit).
NO_RESTART_DROPIN = f"/run/systemd/system/{SERVICE}.service.d/zz-nemesis-no-restart.conf"


def ssm_kill_script() -> list[str]:
    return [
        "set -eu",
        f"mkdir -p {shlex.quote(str(PurePosixPath(NO_RESTART_DROPIN).parent))}",
        f"printf '[Service]\\nRestart=no\\n' > {shlex.quote(NO_RESTART_DROPIN)}",
        "systemctl daemon-reload",
        "pid=$(pgrep -o -x beam.smp)",
        'echo "killing beam.smp pid $pid"',
        'kill -9 "$pid"',
        'for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || { echo "pid $pid gone"; exit 0; }; sleep 0.1; done',
        'echo "pid $pid still alive after SIGKILL" >&2; exit 1',
    ]


def ssm_start_script(await_timeout_s: float = 300) -> list[str]:
    return [
        "set -eu",
        f"rm -f {shlex.quote(NO_RESTART_DROPIN)}",
        "systemctl daemon-reload",
        f"systemctl start {SERVICE}",
        f"rabbitmqctl -t {int(await_timeout_s)} await_startup",
        "rabbitmqctl cluster_status --formatter json",
    ]


def ssm_stop_script() -> list[str]:
    return ["set -eu", f"systemctl stop {SERVICE}", f"! systemctl is-active --quiet {SERVICE}"]


def ssm_ctl_script(args: list[str] | tuple[str, ...]) -> list[str]:
    return ["set -eu", shlex.join(["rabbitmqctl", *args])]


def ssm_await_quorum_script(timeout_s: float) -> list[str]:
    return ["set -eu", f"rabbitmq-upgrade -t {int(timeout_s)} await_online_quorum_plus_one"]


def _iface(params: Mapping[str, Any]) -> str:
    # Nitro instances name the primary interface ens5 on some AMIs and eth0 on others: ask the routing table.
    name = params.get("interface")
    return shlex.quote(str(name)) if name else "$(ip route show default | awk '{print $5; exit}')"


def netem_args(kind: str, params: Mapping[str, Any]) -> list[str]:
    """The netem part of `tc qdisc add`, e.g. ['delay', '100ms'] or ['loss', '5%']."""
    if kind == "network_delay":
        delay = float(params["delay_ms"])
        args = ["delay", f"{delay:g}ms"]
        if params.get("jitter_ms"):
            args.append(f"{float(params['jitter_ms']):g}ms")
        return args
    if kind == "network_loss":
        return ["loss", f"{float(params['loss_percent']):g}%"]
    raise FaultError(f"{kind} is not a network fault")


def ssm_netem_add_script(kind: str, params: Mapping[str, Any]) -> list[str]:
    return [
        "set -eu",
        f"IFACE={_iface(params)}",
        'tc qdisc del dev "$IFACE" root 2>/dev/null || true',
        f'tc qdisc add dev "$IFACE" root netem {" ".join(netem_args(kind, params))}',
        'tc qdisc show dev "$IFACE"',
    ]


def ssm_partition_script(peers: list[str], direction: str = PARTITION_BOTH) -> list[str]:
    """Cut this node off from its peers (their private addresses): both ways, drop what comes from them and what goes
    to them, so every Erlang distribution link and Raft message between the two sides is lost; `from_node` drops only
    what goes to them, `to_node` only what comes from them. The rules carry PARTITION_TAG, so that the heal removes
    exactly them. The load generator's connections are left alone: a client still reaches the cut-off node (the
    minority's view of a partition)."""
    if not peers:
        raise FaultError("a partition needs at least one other node")
    if direction not in PARTITION_DIRECTIONS:
        raise FaultError(f"a partition's direction is one of {', '.join(PARTITION_DIRECTIONS)}, not {direction!r}")
    lines = ["set -eu"]
    for peer in peers:
        address = shlex.quote(peer)
        if direction != PARTITION_FROM_NODE:
            lines.append(f"iptables -I INPUT -s {address} -m comment --comment {PARTITION_TAG} -j DROP")
        if direction != PARTITION_TO_NODE:
            lines.append(f"iptables -I OUTPUT -d {address} -m comment --comment {PARTITION_TAG} -j DROP")
    return [*lines, f"iptables -S | grep -c {PARTITION_TAG}"]


def ssm_partition_heal_script() -> list[str]:
    """Remove every rule a partition added (found by its tag); nothing else of the host's filters is touched."""
    return ["set -eu",
            f"iptables -S | grep -- '--comment {PARTITION_TAG}' | sed 's/^-A /-D /' | while read -r rule; do "
            "eval iptables $rule; done",
            f"! iptables -S | grep -q {PARTITION_TAG}"]


def ssm_netem_del_script(params: Mapping[str, Any]) -> list[str]:
    return [
        "set -eu",
        f"IFACE={_iface(params)}",
        'tc qdisc del dev "$IFACE" root netem 2>/dev/null || true',
        'tc qdisc show dev "$IFACE"',
    ]
