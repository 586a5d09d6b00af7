"""An idle broker's own memory figure per RabbitMQ version (issue 44): what
sizing.resources.scalemodel.IDLE_FOOTPRINT_MIB holds.

    flock /tmp/rabbit-heavy.lock python benchmarks/idle_memory.py --version 3.10 --slot 84 --seconds 60

Stands up a 1-node local cluster (Terraform local stack, `--instance` in its envelope on the default factors, the
management and Prometheus plugins enabled as every node runs them), leaves it idle, reads the broker's own figures
(management API /api/nodes/<name>: mem_used, mem_limit) every 5 s for `--seconds`, and destroys the cluster. The
footprint is the largest mem_used read (the stats database fills its first samples after boot). "3.10" is the
installed package, "4.0" the chroot runtime. Last line: `version=<v> idle_mem_used_mib=<max> mem_limit_mib=<x>`.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from adapters.management import ManagementClient  # noqa: E402
from adapters.terraform import LocalClusterStack, local_stack_variables, prepare_local_root  # noqa: E402
from sizing.campaign import ClusterShape, load_campaign  # noqa: E402
from sizing.campaign.envelopes import config_envelopes  # noqa: E402
from sizing.planning.plan import ConfigPlan  # noqa: E402
from sizing.resources.cost import Volume  # noqa: E402
from sizing.resources.scalemodel import DEFAULT_FACTORS, MIB  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", choices=("3.10", "4.0"), default="3.10")
    parser.add_argument("--slot", type=int, default=84)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--instance", default="c5.2xlarge", help="c5.xlarge: the smallest, nearest its quarter")
    args = parser.parse_args()
    shape = ClusterShape(nodes=1, instance_type=args.instance, volume=Volume("gp2"),
                         rabbitmq_version=None if args.version == "3.10" else args.version)
    plan = ConfigPlan(campaign="bench-idle", config_id=f"slot{args.slot}-idle", shape=shape, slot=args.slot,
                      monthly_cost=0.0)
    campaign = replace(load_campaign(REPO / "campaigns" / "local-quick.yaml"), scale_model=DEFAULT_FACTORS)
    envelopes = config_envelopes(campaign, shape)
    with tempfile.TemporaryDirectory() as state:
        stack = LocalClusterStack(plan.campaign, plan.config_id, state_root=Path(state), logger=logging.getLogger())
        try:
            cluster = stack.up(local_stack_variables(plan, {}, stack.workspace.work_dir, envelopes=envelopes,
                                                     rootfs=prepare_local_root(plan)),
                               healthy_within_s=120)
            client, name = ManagementClient(cluster, timeout_s=5), cluster.node(1).name
            used: list[int] = []
            limit = 0
            end = time.monotonic() + args.seconds
            while time.monotonic() < end:
                node = client.node(name)
                if "mem_used" in node:  # absent until the node's first stats emission after boot
                    used.append(int(node["mem_used"]))
                    limit = int(node["mem_limit"])
                time.sleep(5)
            version = client.rabbitmq_version()
        finally:
            stack.destroy()
    print(f"RabbitMQ {version}: mem_used {min(used) / MIB:.0f}-{max(used) / MIB:.0f} MiB over {len(used)} reads, "
          f"mem_limit {limit / MIB:.0f} MiB ({args.instance}), at most {max(used) / limit:.3f} of it")
    print(f"version={version} idle_mem_used_mib={max(used) / MIB:.1f} mem_limit_mib={limit / MIB:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
