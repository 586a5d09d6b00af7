"""A port of a local cluster's block already listened on: the apply fails before any node starts, with one line
naming the port, its role (which node), the cluster (campaign, config, repeat) and the holder, and nothing is
left running. Known answer: the test itself holds the port, so the holder must be this process's pid."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from adapters.terraform import LocalClusterStack, TerraformError, local_stack_variables
from tests.fixtures.cluster import busy_ports, cluster_plan

pytestmark = pytest.mark.cluster
SLOT = 41  # this test's port block (21000 + 50 * 41)


def _beams_of(port_base: int) -> list[int]:
    """Erlang VMs whose environment names a node of the block's cluster (as cluster.sh destroy finds them)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if f"RABBITMQ_NODENAME=rabbit-{port_base}-".encode() in environ:
            pids.append(int(entry))
    return pids


def test_a_taken_port_fails_the_apply_with_one_line_and_leaves_nothing(tmp_path):
    plan = cluster_plan(SLOT, nodes=2)
    base = plan.local_port_base
    assert busy_ports(base) == [], "the test's port block must be free to start with"
    taken = base + 11  # the management port of node 2 (block layout: terraform/modules/local_cluster/main.tf)
    holder = socket.socket()
    holder.bind(("127.0.0.1", taken))
    holder.listen()
    stack = LocalClusterStack(plan.campaign, plan.config_id, state_root=tmp_path / "tf")
    try:
        with pytest.raises(TerraformError) as err:
            stack.apply_variables(local_stack_variables(plan, {}, stack.workspace.work_dir))
        # The error's first line is the reason, whole (the task log and the demo show that line); the output
        # follows for the curious.
        line = str(err.value).splitlines()[0]
        assert line.startswith("terraform apply failed (exit 1): error: port "), str(err.value)
        assert f"port {taken} (management of node 2)" in line
        assert f"cluster {plan.campaign}-{plan.config_id}-r1" in line
        assert f"in use by pid {os.getpid()} (" in line
    finally:
        holder.close()
        stack.destroy()
    assert _beams_of(base) == []
    assert busy_ports(base) == []
    assert not (stack.workspace.work_dir / f"{plan.campaign}-{plan.config_id}-r1" / "node-1").exists()
