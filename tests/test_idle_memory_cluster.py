"""The memory rule of the scale model (issue 44) on real nodes: an idle broker in its envelope holds at most a quarter
of its high watermark, by its own figures, on the installed 3.10 and the 4.0 root (slots 85 and 87: ports
25250-25299 and 25350-25399).

The node: c5.xlarge (8 GiB), the smallest AWS instance type the catalogs ship and so the nearest to the quarter, on
the default factors (sizing.resources.scalemodel.DEFAULT_FACTORS), with the management and Prometheus plugins as every
node runs them. Counters: the broker's own mem_used and mem_limit (management API /api/nodes/<name>), read for 20 s
after boot. Known answer: mem_limit is what the rule computed (NodeEnvelope.watermark_bytes: 3.10's idle 160 MiB + 0.4 x
1344 MiB; 4.0's 140 MiB + 0.6 x 1344 MiB), and mem_used / mem_limit <= 0.25 at every read.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from adapters import envelope as env
from adapters.management import ManagementClient
from adapters.terraform import LocalClusterStack, local_stack_variables, prepare_local_root
from sizing.campaign import ClusterShape, load_campaign
from sizing.campaign.envelopes import config_envelopes
from sizing.planning.plan import ConfigPlan
from sizing.resources.cost import Volume
from sizing.resources.scalemodel import DEFAULT_FACTORS, MIB
from tests.fixtures.cluster import busy_ports

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[1]
SUPPORT = env.detect_support()
if not SUPPORT.enforced["memory"]:  # pragma: no cover - this machine kind has it; say so where it does not
    pytest.fail(f"memory envelopes cannot be enforced here: {SUPPORT.summary()}", pytrace=False)


@pytest.mark.parametrize(("version", "slot", "expected_mib"), [
    (None, 85, 160 + 0.4 * 1344),
    ("4.0", 87, 140 + 0.6 * 1344),
])
def test_an_idle_node_holds_at_most_a_quarter_of_its_watermark(tmp_path, version, slot, expected_mib):
    shape = ClusterShape(nodes=1, instance_type="c5.xlarge", volume=Volume("gp2"), rabbitmq_version=version)
    plan = ConfigPlan(campaign="pytest-idle", config_id=f"idle-slot{slot}", shape=shape, slot=slot, monthly_cost=0.0)
    campaign = replace(load_campaign(REPO / "campaigns" / "local-quick.yaml"), scale_model=DEFAULT_FACTORS)
    envelopes = config_envelopes(campaign, shape)
    assert envelopes is not None and envelopes.node.watermark_bytes == pytest.approx(expected_mib * MIB, abs=2)
    assert not busy_ports(plan.local_port_base), f"slot {slot} is in use"
    stack = LocalClusterStack(plan.campaign, plan.config_id, state_root=tmp_path)
    try:
        cluster = stack.up(local_stack_variables(plan, {}, stack.workspace.work_dir, envelopes=envelopes,
                                                     rootfs=prepare_local_root(plan)),
                           healthy_within_s=90)
        client, name = ManagementClient(cluster, timeout_s=5), cluster.node(1).name
        reads: list[tuple[int, int]] = []
        deadline = time.monotonic() + 60
        while len(reads) < 5 and time.monotonic() < deadline:
            node = client.node(name)
            if "mem_used" in node:  # absent until the node's first stats emission after boot
                reads.append((int(node["mem_used"]), int(node["mem_limit"])))
                time.sleep(4)
            else:
                time.sleep(0.5)
    finally:
        stack.destroy()
        env.reclaim(tmp_path)  # whatever a failed apply left
    assert len(reads) == 5, reads
    for used, limit in reads:
        # RabbitMQ takes floor(relative x total) of the total it is told: within a byte of the rule's figure
        assert limit == pytest.approx(envelopes.node.watermark_bytes, abs=2)
        assert used / limit <= 0.25, f"idle at {used / MIB:.0f} of {limit / MIB:.0f} MiB"
