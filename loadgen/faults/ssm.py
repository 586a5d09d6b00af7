"""Faults on the aws target through SSM Run Command (AWS-RunShellScript on each node's EC2 instance).

The same kinds as the local executor, plus `tc netem` network faults. Each action is one shell script
(built in loadgen.faults.commands) sent with `send_command` and polled with `get_command_invocation`. The SSM
client is received, made by the adapter (adapters.ssm.ssm_client): this module builds and runs scripts, no client.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from adapters.ssm import command_invocation
from loadgen.faults import commands
from loadgen.faults.base import FaultError
from sizing.campaign import partition_direction
from sizing.planning.timeline import FaultEvent
from sizing.resources.cluster import ClusterInfo, NodeInfo

DOCUMENT = "AWS-RunShellScript"
TERMINAL = {"Success", "Failed", "Cancelled", "TimedOut", "Cancelling"}


def send_command_args(instance_id: str, script: list[str], comment: str, timeout_s: int) -> dict[str, Any]:
    """The exact `ssm.send_command` keyword arguments for one script on one instance."""
    return {
        "InstanceIds": [instance_id],
        "DocumentName": DOCUMENT,
        "Comment": comment[:100],  # SSM caps comments at 100 characters
        "TimeoutSeconds": max(30, int(timeout_s)),  # time to start running on the instance
        "Parameters": {"commands": script, "executionTimeout": [str(int(timeout_s))]},
    }


class SsmFaultExecutor:
    """`ssm_client`: a botocore SSM client (adapters.ssm.ssm_client; tests: a stubbed one)."""

    def __init__(self, cluster: ClusterInfo, ssm_client: Any, broker_config: Mapping[str, Any] | None = None,
                 command_timeout_s: int = 600, poll_s: float = 1.0, quorum_timeout_s: float = 120,
                 sleep: Callable[[float], Any] = time.sleep) -> None:
        self.cluster = cluster
        self.ssm = ssm_client
        self.broker_config = dict(broker_config or {})
        self.command_timeout_s = command_timeout_s
        self.poll_s = poll_s
        self.quorum_timeout_s = quorum_timeout_s
        self.sleep = sleep

    # ------------------------------------------------------------------------------------- interface

    def inject(self, fault: FaultEvent, node: NodeInfo | None) -> dict[str, Any]:
        if fault.kind == "rolling_restart":
            return self.rolling_restart(fault)
        node = self._need(fault, node)
        params = dict(fault.params)
        script = {
            "kill_node": commands.ssm_kill_script,
            "stop_node": commands.ssm_stop_script,
            "memory_alarm": lambda: commands.ssm_ctl_script(
                ["set_vm_memory_high_watermark", *commands.MEMORY_ALARM_ARGS]),
            "disk_alarm": lambda: commands.ssm_ctl_script(["set_disk_free_limit", *commands.DISK_ALARM_ARGS]),
            "network_delay": lambda: commands.ssm_netem_add_script("network_delay", params),
            "network_loss": lambda: commands.ssm_netem_add_script("network_loss", params),
            "partition": lambda: commands.ssm_partition_script(
                [n.host for n in self.cluster.nodes if n.number != node.number], partition_direction(params)),
        }.get(fault.kind)
        if script is None:
            raise FaultError(f"unknown fault kind {fault.kind!r}")
        return self.run(node, script(), f"nemesis {fault.fault_id} {fault.kind} inject")

    def heal(self, fault: FaultEvent, node: NodeInfo | None) -> dict[str, Any]:
        if fault.kind == "rolling_restart":
            # Interrupted half way? Start every node (systemctl start of a running unit is a no-op).
            return {"nodes": [self.run(n, commands.ssm_start_script(), f"nemesis {fault.fault_id} ensure up")
                              for n in self.cluster.nodes]}
        node = self._need(fault, node)
        params = dict(fault.params)
        script = {
            "kill_node": commands.ssm_start_script,
            "stop_node": commands.ssm_start_script,
            "memory_alarm": lambda: commands.ssm_ctl_script(
                ["set_vm_memory_high_watermark", *commands.memory_watermark_restore(self.broker_config)]),
            "disk_alarm": lambda: commands.ssm_ctl_script(
                ["set_disk_free_limit", *commands.disk_free_limit_restore(self.broker_config)]),
            "network_delay": lambda: commands.ssm_netem_del_script(params),
            "network_loss": lambda: commands.ssm_netem_del_script(params),
            "partition": commands.ssm_partition_heal_script,
        }.get(fault.kind)
        if script is None:
            raise FaultError(f"unknown fault kind {fault.kind!r}")
        return self.run(node, script(), f"nemesis {fault.fault_id} {fault.kind} heal")

    def rolling_restart(self, fault: FaultEvent) -> dict[str, Any]:
        t0 = time.monotonic()
        steps = []
        for node in sorted(self.cluster.nodes, key=lambda n: n.number):
            s0 = time.monotonic()
            self.run(node, commands.ssm_stop_script(), f"nemesis {fault.fault_id} stop {node.number}")
            self.run(node, commands.ssm_start_script(), f"nemesis {fault.fault_id} start {node.number}")
            step: dict[str, Any] = {"node": node.name, "running_after_s": round(time.monotonic() - s0, 3)}
            try:
                self.run(node, commands.ssm_await_quorum_script(self.quorum_timeout_s),
                         f"nemesis {fault.fault_id} quorum {node.number}")
            except FaultError as err:
                step["quorum_timeout"] = str(err)[-300:]
            step["step_s"] = round(time.monotonic() - s0, 3)
            steps.append(step)
        return {"nodes": steps, "duration_s": round(time.monotonic() - t0, 3)}

    # ------------------------------------------------------------------------------------- running

    def run(self, node: NodeInfo, script: list[str], comment: str) -> dict[str, Any]:
        if not node.instance_id:
            raise FaultError(f"node {node.name} has no instance_id; SSM faults need the aws target's cluster output")
        response = self.ssm.send_command(**send_command_args(node.instance_id, script, comment,
                                                             self.command_timeout_s))
        command_id = response["Command"]["CommandId"]
        deadline = time.monotonic() + self.command_timeout_s + 60
        while True:
            invocation = self._invocation(command_id, node.instance_id)
            status = invocation.get("Status") if invocation else None
            if status in TERMINAL:
                break
            if time.monotonic() > deadline:
                raise FaultError(f"SSM command {command_id} on {node.instance_id} still {status} after "
                                 f"{self.command_timeout_s + 60}s")
            self.sleep(self.poll_s)
        detail = {"command_id": command_id, "instance_id": node.instance_id, "script": script,
                  "output": (invocation.get("StandardOutputContent") or "")[-300:]}
        if status != "Success":
            raise FaultError(f"SSM command {command_id} on {node.instance_id} ({node.name}) ended {status}: "
                             f"{(invocation.get('StandardErrorContent') or '').strip()[-300:]}")
        return detail

    def _invocation(self, command_id: str, instance_id: str) -> dict[str, Any] | None:
        return command_invocation(self.ssm, command_id, instance_id)  # None: not registered yet

    @staticmethod
    def _need(fault: FaultEvent, node: NodeInfo | None) -> NodeInfo:
        if node is None:
            raise FaultError(f"{fault.kind} {fault.fault_id} needs a target node")
        return node
