"""The node sampler's own cost: CPU seconds per second it adds to the load generator's process.

    python benchmarks/node_sampler_cost.py --slot 57 --nodes 3 --seconds 30

Stands up a local cluster (Terraform local stack, the given port slot), measures this process's CPU
(time.process_time: every thread) over `--seconds` idle, then over `--seconds` with a NodeSampler (1 s interval,
one thread per node: /proc reads + a gzip /metrics scrape + parsing), and destroys the cluster. The runner
carries exactly these threads (loadgen.runner, RunOptions.node_interval_s), so the difference is the generator
CPU per second with vs without the sampler. Last line: `sampler_cpu_s_per_s=<x> nodes=<n>`.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from adapters.terraform import LocalClusterStack, local_stack_variables, prepare_local_root  # noqa: E402
from loadgen.nodes import NodeSampler  # noqa: E402
from sizing.campaign import ClusterShape  # noqa: E402
from sizing.planning.plan import ConfigPlan  # noqa: E402
from sizing.resources.cost import Volume  # noqa: E402


def cpu_per_second(seconds: float, sampler: NodeSampler | None) -> tuple[float, int]:
    rows: list[dict] = []
    if sampler is not None:
        sampler.emit = rows.append
        sampler.start()
    cpu, wall = time.process_time(), time.monotonic()
    time.sleep(seconds)
    used = (time.process_time() - cpu) / (time.monotonic() - wall)
    if sampler is not None:
        sampler.stop()
        sampler.join(timeout=30)
    return used, len(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slot", type=int, default=57)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    shape = ClusterShape(nodes=args.nodes, instance_type="c5.2xlarge", volume=Volume("gp2"))
    plan = ConfigPlan(campaign="bench", config_id=f"slot{args.slot}-n{args.nodes}", shape=shape, slot=args.slot,
                      monthly_cost=0.0)
    with tempfile.TemporaryDirectory() as state:
        stack = LocalClusterStack(plan.campaign, plan.config_id, state_root=Path(state), logger=logging.getLogger())
        cluster = stack.up(local_stack_variables(plan, {}, stack.workspace.work_dir, "guest", "guest",
                                                 rootfs=prepare_local_root(plan)),
                           healthy_within_s=120)
        try:
            idle, _ = cpu_per_second(args.seconds, None)
            sampler = NodeSampler(cluster, lambda _row: None, time.monotonic(), time.time())
            sampled, rows = cpu_per_second(args.seconds, sampler)
        finally:
            stack.destroy()
    print(f"without sampler: {idle:.4f} CPU-s/s; with: {sampled:.4f} CPU-s/s ({rows} rows, "
          f"{sampler.failures} failed reads)")
    print(f"sampler_cpu_s_per_s={sampled - idle:.4f} nodes={args.nodes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
