"""The host calibration's reference measurement (sizing.resources.calibration): one RabbitMQ node in a fixed CPU
envelope, driven at its maximum rate by this load generator, the messages the broker confirmed counted against the CPU
the node's cgroup was charged (the OS's own counter). About 45 s: the node's boot, 25 s of load, the teardown.

    sizing calibrate            # measure now, store it for this host (adapters.calibration), print it
    sizing calibrate --show     # what is stored for this host (nothing measured)
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adapters import calibration as store
from sizing.resources.calibration import REFERENCE_NODE_CORES, HostCalibration, reference_spec

CalibrationError = store.CalibrationError
# The port block of the reference node (ports 21000 + 50 x slot ...): apart from the demo's, the tests' and the
# benchmarks' slots.
SLOT = 97
# Seconds the node gets to become healthy: it boots outside its quota (adapters/envelope.py), ~10 s here.
HEALTHY_WITHIN_S = 120


def reference_envelopes(node_cores: float = REFERENCE_NODE_CORES, period_us: int | None = None,
                        schedulers: int | None = None) -> Any:
    """The reference node's envelope: REFERENCE_NODE_CORES of this host (no calibration applied: it *is* the
    calibration), 2 GiB, and its volumes throttled far above what the run writes, so that its CPU binds.
    `node_cores`, `period_us` (the CFS period) and `schedulers` (+S; 0: the VM's default, one per host core; None:
    the scale model's rule) give another node, for the small-quota benchmark (benchmarks/small_quota.py)."""
    from dataclasses import replace

    from sizing.campaign import parse_campaign
    from sizing.resources.scalemodel import ScaleFactors, cluster_envelopes, cpu_quota_us

    campaign = parse_campaign(reference_spec())
    shape = campaign.clusters[0]
    instance = campaign.catalog.instances[shape.instance_type]
    factors = ScaleFactors(cpu_cores_per_vcpu=node_cores / instance.vcpus,
                           memory_mib_per_gib=2048 / instance.memory_gib, disk_divisor=1.0)
    envelopes = cluster_envelopes(campaign.catalog, shape.instance_type, shape.volumes, factors)
    period = period_us or envelopes.node.cpu_period_us
    node = replace(envelopes.node, cpu_period_us=period, cpu_quota_us=cpu_quota_us(envelopes.node.cpu_cores, period),
                   schedulers=envelopes.node.schedulers if schedulers is None else (schedulers or None))
    return campaign, replace(envelopes, node=node)


def measure(echo: Callable[[str], None] = print, slot: int = SLOT, node_cores: float = REFERENCE_NODE_CORES,
            judged: bool = True, period_us: int | None = None, schedulers: int | None = None) -> HostCalibration:
    """Run the reference measurement on a fresh node (destroyed after, also on failure) and return its answer.
    `node_cores`, `period_us` or `schedulers` other than the reference's is a benchmark of their own effect, never a
    calibration (and `judged=False` returns its figures even where they could not calibrate anything)."""
    import pyarrow.parquet as pq

    from adapters import envelope as env
    from adapters.nodestats import read_machine_cpu
    from adapters.terraform import LocalClusterStack, local_stack_variables, prepare_local_root
    from loadgen.runner import Runner, RunOptions
    from sizing.contract import raw_layout
    from sizing.planning.plan import ConfigPlan

    campaign, envelopes = reference_envelopes(node_cores, period_us, schedulers)
    shape = campaign.clusters[0]
    plan = ConfigPlan(campaign=campaign.name, config_id=shape.config_id, shape=shape, slot=slot, monthly_cost=0.0)
    fingerprint, model, cores = store.this_host()
    with tempfile.TemporaryDirectory(prefix="sizing-calibration-") as tmp:
        state_root, out_dir = Path(tmp) / "state", Path(tmp) / "records"
        stack = LocalClusterStack(plan.campaign, plan.config_id, state_root=state_root)
        try:
            variables = local_stack_variables(plan, {}, stack.workspace.work_dir, envelopes=envelopes,
                                              rootfs=prepare_local_root(plan))
            echo(f"calibration: a reference node at {node_cores:g} cores (slot {slot})")
            cluster = stack.up(variables, healthy_within_s=HEALTHY_WITHIN_S)
            node = cluster.node(1)
            record = env.read_record(Path(node.pid_file).parent) if node.pid_file else None
            cgroups = env.detect_cgroups()
            if record is None or cgroups is None:
                raise CalibrationError("the reference node runs in no cgroup: this machine cannot enforce a CPU "
                                       "envelope, so there is nothing to calibrate")
            options = RunOptions(workers=1, out_dir=out_dir, upload=False, drain_timeout_s=10, sample_interval_s=5,
                                 node_interval_s=0, progress_interval_s=60)
            runner = Runner(campaign, shape.config_id, "reference", f"cal{int(time.time())}", cluster,
                            options=options, echo=lambda line: None)
            samples: list[tuple[float, int]] = []  # (epoch s, the node cgroup's CPU ns): the OS's own counter
            machine: list[tuple[float, int]] = []  # (epoch s, the machine's busy CPU ns: /proc/stat)
            done = threading.Event()

            def sample() -> None:
                while not done.wait(0.2):
                    now = time.time()
                    samples.append((now, cgroups.cpu_usage_ns(record.cgroup)))
                    machine.append((now, int(read_machine_cpu().busy_s * 1e9)))

            sampler = threading.Thread(target=sample, name="calibration-cpu", daemon=True)
            start = time.time()
            sampler.start()
            try:
                code = runner.run()
            finally:
                done.set()
                sampler.join()
            if code != 0:
                raise CalibrationError(f"the reference run failed (exit {code}): {runner.errors}")
            files = sorted((out_dir / raw_layout.raw_run_prefix(runner.key) / "client_seconds").rglob("*.parquet"))
            rows = [row for f in files
                    for row in pq.read_table(f, columns=["ts", "confirmed", "phase", "warmup"]).to_pylist()]
        finally:
            stack.destroy()
    steady = [r for r in rows if r["phase"] and not r["warmup"]]
    if not steady:
        raise CalibrationError("the reference run recorded no steady second")
    by_second: dict[float, int] = {}
    for row in steady:  # one row per worker and second
        by_second[row["ts"]] = by_second.get(row["ts"], 0) + int(row["confirmed"])
    t0, t1 = min(by_second), max(by_second) + 1.0
    cpu_s = (_interpolate(samples, t1) - _interpolate(samples, t0)) / 1e9
    machine_s = (_interpolate(machine, t1) - _interpolate(machine, t0)) / 1e9
    calibration = HostCalibration(fingerprint=fingerprint, cpu_model=model, cores=cores, measured_at=start,
                                  node_cores=node_cores, measured_s=t1 - t0,
                                  messages=sum(by_second.values()), node_cpu_s=cpu_s,
                                  rest_cpu_s=max(0.0, machine_s - cpu_s))
    problems = calibration.problems() if judged else []
    if problems:
        raise CalibrationError("; ".join(problems))
    return calibration


def _interpolate(samples: list[tuple[float, int]], t: float) -> float:
    """The counter at time t, linear between the two samples around it (it is sampled every 0.2 s)."""
    before = max((s for s in samples if s[0] <= t), default=None)
    after = min((s for s in samples if s[0] >= t), default=None)
    if before is None or after is None:
        raise CalibrationError(f"the node's CPU counter was not sampled around {t:.1f}")
    if after[0] == before[0]:
        return float(before[1])
    return before[1] + (after[1] - before[1]) * (t - before[0]) / (after[0] - before[0])


