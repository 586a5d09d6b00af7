"""Faults on the local target: every node is an Erlang VM on this machine, described by its NodeInfo
(pid_file, start_cmd, stop_cmd, ctl_cmd) and the cluster's ctl_env. On a cluster with a namespace per node
(ClusterInfo.network, adapters/netns.py), packets between the nodes can be dropped too: a partition cuts the target
node off from every other node, both ways (as the aws executor's packet filters do), and network_loss drops a share
of what the node sends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from adapters import netns
from adapters.procs import pid_alive
from loadgen.faults import commands
from loadgen.faults.base import FaultError
from loadgen.faults.probe import ManagementProbe, amqp_port_open
from sizing.campaign import (
    NAMESPACE_FAULTS,
    PARTITION,
    PARTITION_BOTH,
    PARTITION_TO_NODE,
    partition_direction,
)
from sizing.planning.timeline import FaultEvent
from sizing.resources.cluster import ClusterInfo, NodeInfo


def run_command(argv: Sequence[str], env: Mapping[str, str], timeout_s: float = 120.0) -> str:
    """Run one command to completion; its stdout, or FaultError carrying its stderr."""
    try:
        proc = subprocess.run(list(argv), env={**os.environ, **env}, capture_output=True, text=True,
                              timeout=timeout_s, stdin=subprocess.DEVNULL, start_new_session=True)
    except subprocess.TimeoutExpired as err:
        raise FaultError(f"{argv[0]} did not finish in {timeout_s:g}s") from err
    except OSError as err:
        raise FaultError(f"cannot run {argv[0]}: {err}") from err
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip()[-600:]
        raise FaultError(f"{' '.join(argv[-3:])} exited {proc.returncode}: {tail}")
    return proc.stdout


def read_pid(node: NodeInfo) -> int:
    path = node.pid_file
    if not path:
        raise FaultError(f"node {node.name} has no pid_file; the cluster description cannot drive local faults")
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError) as err:
        raise FaultError(f"cannot read the pid of {node.name} from {path}: {err}") from err



class LocalFaultExecutor:
    def __init__(self, cluster: ClusterInfo, broker_config: Mapping[str, Any] | None = None,
                 probe: ManagementProbe | None = None, run: Callable[..., str] = run_command,
                 start_timeout_s: float = 120.0, quorum_timeout_s: float = 60.0, poll_s: float = 0.2) -> None:
        self.cluster = cluster
        self.broker_config = dict(broker_config or {})
        self.probe = probe or ManagementProbe(cluster)
        self.run = run
        self.start_timeout_s = start_timeout_s
        self.quorum_timeout_s = quorum_timeout_s
        self.poll_s = poll_s
        self.env = dict(cluster.ctl_env)

    # ------------------------------------------------------------------------------------- interface

    def inject(self, fault: FaultEvent, node: NodeInfo | None) -> dict[str, Any]:
        self._network_refusal(fault)
        if fault.kind == "rolling_restart":
            return self.rolling_restart()
        node = self._need(fault, node)
        if fault.kind == PARTITION:
            return self.partition(node, partition_direction(dict(fault.params)))
        if fault.kind == "network_loss":
            return self.loss(node, float(dict(fault.params)["loss_percent"]))
        if fault.kind == "kill_node":
            return self.kill(node)
        if fault.kind == "stop_node":
            return self.stop(node)
        if fault.kind == "memory_alarm":
            return self._ctl(commands.memory_alarm_cmd(node, True, self.broker_config))
        if fault.kind == "disk_alarm":
            return self._ctl(commands.disk_alarm_cmd(node, True, self.broker_config))
        raise FaultError(f"unknown fault kind {fault.kind!r}")

    def heal(self, fault: FaultEvent, node: NodeInfo | None) -> dict[str, Any]:
        self._network_refusal(fault)
        if fault.kind == PARTITION:
            return self.heal_partition()
        if fault.kind == "network_loss":
            return self.loss(self._need(fault, node), 0.0)
        if fault.kind == "rolling_restart":
            # Heals itself inside inject; make sure nobody is left down if it was interrupted.
            return {"started": [n.name for n in self.cluster.nodes if self.start(n).get("command")]}
        node = self._need(fault, node)
        if fault.kind in ("kill_node", "stop_node"):
            return self.start(node)
        if fault.kind == "memory_alarm":
            return self._ctl(commands.memory_alarm_cmd(node, False, self.broker_config))
        if fault.kind == "disk_alarm":
            return self._ctl(commands.disk_alarm_cmd(node, False, self.broker_config))
        raise FaultError(f"unknown fault kind {fault.kind!r}")

    # ------------------------------------------------------------------------------------- actions

    def kill(self, node: NodeInfo) -> dict[str, Any]:
        pid = read_pid(node)
        if not pid_alive(pid):
            raise FaultError(f"{node.name} is not running (pid {pid} from {node.pid_file} is gone)")
        t0 = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        self._wait(lambda: not pid_alive(pid), 10.0, f"pid {pid} of {node.name} still alive after SIGKILL")
        return {"pid": pid, "signal": "SIGKILL", "gone_after_s": round(time.monotonic() - t0, 3)}

    def stop(self, node: NodeInfo) -> dict[str, Any]:
        pid = read_pid(node)
        t0 = time.monotonic()
        cmd = list(commands.require(node, "stop_cmd"))
        self.run(cmd, self.env, timeout_s=self.start_timeout_s)
        self._wait(lambda: not pid_alive(pid), 60.0, f"{node.name} (pid {pid}) still alive after {cmd}")
        return {"pid": pid, "command": cmd, "stopped_after_s": round(time.monotonic() - t0, 3)}

    def start(self, node: NodeInfo) -> dict[str, Any]:
        """Start the node unless it is up, then wait until it runs inside the cluster again."""
        if self.is_up(node):
            return {"already_running": True}
        t0 = time.monotonic()
        cmd = list(commands.require(node, "start_cmd"))
        self.run(cmd, self.env, timeout_s=self.start_timeout_s)
        self.wait_running(node, t0 + self.start_timeout_s)
        return {"command": cmd, "running_after_s": round(time.monotonic() - t0, 3), "pid": read_pid(node)}

    def rolling_restart(self) -> dict[str, Any]:
        t0 = time.monotonic()
        steps = []
        for node in sorted(self.cluster.nodes, key=lambda n: n.number):
            s0 = time.monotonic()
            stopped = self.stop(node)
            self.start(node)
            step = {"node": node.name, "stopped_after_s": stopped["stopped_after_s"],
                    "running_after_s": round(time.monotonic() - s0, 3)}
            step.update(self.wait_quorum(node))
            step["step_s"] = round(time.monotonic() - s0, 3)
            steps.append(step)
        return {"nodes": steps, "duration_s": round(time.monotonic() - t0, 3)}

    def partition(self, node: NodeInfo, direction: str = PARTITION_BOTH) -> dict[str, Any]:
        """The node cut off from every other node of its cluster, both ways or one (PARTITION_DIRECTIONS); the
        clients still reach every node."""
        others = [self._net(n) for n in self.cluster.nodes if n.number != node.number]
        if not others:
            raise FaultError(f"a partition needs another node: {self.cluster.cluster_name} has only {node.name}")
        # netns' one-way cut drops the first group's packets to the others
        groups = [others, [self._net(node)]] if direction == PARTITION_TO_NODE else [[self._net(node)], others]
        return self._network(lambda: netns.partition(groups, one_way=direction != PARTITION_BOTH))

    def heal_partition(self) -> dict[str, Any]:
        """Every cut of the cluster removed, with the packets each node's rule dropped meanwhile (nftables' own
        counters, which outlive the rule's set being emptied)."""
        healed = self._network(lambda: netns.heal(self._slot()))
        healed["dropped_packets"] = {n.name: self._network(lambda n=n: netns.dropped(self._net(n)))["partition"]
                                     for n in self.cluster.nodes}
        return healed

    def loss(self, node: NodeInfo, percent: float) -> dict[str, Any]:
        """A random share of the node's outgoing packets dropped (0: none), to clients and nodes alike."""
        return self._network(lambda: netns.loss(self._net(node), percent))

    # ------------------------------------------------------------------------------------- waiting

    def is_up(self, node: NodeInfo) -> bool:
        try:
            alive = pid_alive(read_pid(node))
        except FaultError:
            alive = False
        return alive and amqp_port_open(node) and self.probe.node_running(node.name)

    def wait_running(self, node: NodeInfo, deadline: float) -> None:
        """Running = the VM's pid alive, the AMQP listener open and the cluster reporting it running."""
        def up() -> bool:
            return self.is_up(node)
        self._wait(up, max(deadline - time.monotonic(), 0.0),
                   f"{node.name} not running in the cluster after {self.start_timeout_s:g}s")

    def wait_quorum(self, node: NodeInfo) -> dict[str, Any]:
        """Bounded wait for quorum queues to count the restarted node as an online member again."""
        t0 = time.monotonic()
        cmd = commands.await_quorum_cmd(node, self.quorum_timeout_s)
        try:
            if cmd is not None:
                self.run(cmd, self.env, timeout_s=self.quorum_timeout_s + 30)
            else:
                self._wait(lambda: not self.probe.quorum_queues_missing(node.name), self.quorum_timeout_s,
                           "quorum members missing")
        except FaultError as err:
            return {"quorum_wait_s": round(time.monotonic() - t0, 3), "quorum_timeout": str(err)[-300:]}
        return {"quorum_wait_s": round(time.monotonic() - t0, 3)}

    def _wait(self, ok: Callable[[], bool], timeout_s: float, message: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not ok():
            if time.monotonic() >= deadline:
                raise FaultError(message)
            time.sleep(self.poll_s)

    def _ctl(self, cmd: list[str]) -> dict[str, Any]:
        out = self.run(cmd, self.env, timeout_s=60.0)
        return {"command": cmd, "output": out.strip()[-300:]}

    def _network_refusal(self, fault: FaultEvent) -> None:
        namespaced = self.cluster.network is not None
        if fault.kind in commands.NETWORK_KINDS and not (namespaced and fault.kind in NAMESPACE_FAULTS):
            raise FaultError(commands.local_network_refusal(fault.kind))

    def _slot(self) -> int:
        if self.cluster.network is None:
            raise FaultError(commands.local_network_refusal(PARTITION))
        return self.cluster.network.slot

    def _net(self, node: NodeInfo) -> netns.NodeNet:
        return netns.NodeNet(self._slot(), node.number)

    @staticmethod
    def _network(action: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        try:
            return action()
        except netns.NetnsError as err:
            raise FaultError(str(err)) from err

    @staticmethod
    def _need(fault: FaultEvent, node: NodeInfo | None) -> NodeInfo:
        if node is None:
            raise FaultError(f"{fault.kind} {fault.fault_id} needs a target node")
        return node
