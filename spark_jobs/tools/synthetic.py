"""Synthetic raw records in the exact loadgen layout (sizing.contract.layout keys) and schema (sizing.contract.records).

Modelling (stated honestly): one `client_seconds` row is one load-generator *worker process* second, as
the record schema defines it; a worker aggregates many clients (the seed's 400 clients over 8 workers
= 50 clients per row). The seed scale "21 configs x 15 intensities x 600 s x 400 clients ~ 75M
client-seconds" is therefore 21 x 15 x 600 x 8 = 1.51M worker-second rows here, each carrying three
histograms (~90 + ~60 + ~20 buckets). Each config has a capacity; below it the phase keeps up with
millisecond latencies, above it throughput flattens at the capacity and latency grows with the backlog.
Node resources (`node_seconds`, one row per node per second): CPU grows with load / capacity and reaches 95 %
at capacity (seed 000's bottom cluster: CPU-bound), disk writes 1 KB per message per replica plus the second
write of a growing backlog, network carries the clients' traffic plus two replicas; figures on the `aws` target.

    python -m spark_jobs.tools.synthetic --spec campaigns/quorum-sizing-2020.yaml --run-id synth-1 \
        --scenario increasing-intensity --duration-s 600 --workers 8
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from sizing.contract import raw_layout, records
from sizing.contract.histogram import LOG_GAMMA, MAX_BUCKET, WIRE_DTYPE, buckets_of
from sizing.contract.layout import RunKey
from sizing.resources.disks import VOLUME_ROLES

# Top throughput (msg/s) per "<nodes>x<instance>-<volume>" as seed 000 prints it (quorum queues).
SEED_000_CAPACITY = {
    "io1": {(5, "c5.2xlarge"): 50e3, (3, "c5.4xlarge"): 37e3, (5, "c5.4xlarge"): 53e3, (7, "c5.2xlarge"): 54e3,
            (3, "c5.9xlarge"): 40e3, (9, "c5.2xlarge"): 63e3, (7, "c5.4xlarge"): 65e3},
    "gp2": {(5, "c5.2xlarge"): 42e3, (7, "c5.2xlarge"): 54e3, (9, "c5.2xlarge"): 66e3, (3, "c5.4xlarge"): 36e3,
            (5, "c5.4xlarge"): 54e3, (7, "c5.4xlarge"): 67e3, (3, "c5.9xlarge"): 37e3},
    "st1": {(5, "c5.4xlarge"): 54e3, (5, "c5.2xlarge"): 37e3, (7, "c5.2xlarge"): 50e3, (9, "c5.2xlarge"): 62e3,
            (3, "c5.4xlarge"): 27e3, (7, "c5.4xlarge"): 67e3, (3, "c5.9xlarge"): 32e3},
}


@dataclass(frozen=True)
class PhasePlan:
    rate: float
    duration_s: int
    warmup_s: int
    name: str = ""


@dataclass(frozen=True)
class RunModel:
    key: RunKey
    phases: tuple[PhasePlan, ...]
    workers: int = 8
    capacity: float = 50_000.0
    base_latency_ms: float = 4.0
    fault_at: dict[int, float] = field(default_factory=dict)  # phase -> seconds into the phase
    fault_outage_s: int = 20
    seed: int = 0
    start_ts: float = 1_600_000_000.0
    nodes: int = 3


def _hist_block(rng: np.random.Generator, n: np.ndarray, median_us: np.ndarray, sigma: float,
                spread: float = 2.5) -> pa.Array:
    """One wire-format histogram per row: n[i] samples of a lognormal around median_us[i] (vectorised)."""
    rows = n.size
    width = math.ceil(2 * spread * sigma / LOG_GAMMA) + 1
    centre = buckets_of(median_us)
    lo = np.clip(centre - width // 2, 1, MAX_BUCKET - width)
    offsets = np.arange(width)
    z = (offsets - width // 2) * LOG_GAMMA / sigma
    p = np.exp(-0.5 * z * z)
    p /= p.sum()
    counts = np.floor(n[:, None] * p[None, :] + rng.random((rows, width))).astype(np.int64)
    wire = np.empty((rows, width), dtype=WIRE_DTYPE)
    wire["bucket"] = lo[:, None] + offsets[None, :]
    wire["count"] = np.maximum(counts, 1) * (n[:, None] > 0)
    data = pa.py_buffer(wire.tobytes())
    row_bytes = width * WIRE_DTYPE.itemsize
    offs = pa.py_buffer((np.arange(rows + 1, dtype=np.int32) * row_bytes).tobytes())
    return pa.Array.from_buffers(pa.binary(), rows, [None, offs, data])


def run_objects(model: RunModel) -> dict[str, pa.Table]:
    """Every raw object of one run: S3 key -> Arrow table in records.arrow_schema."""
    rng = np.random.default_rng(model.seed)
    key = model.key
    kd = key.as_dict()
    objects: dict[str, pa.Table] = {}
    phase_rows, acc_rows, event_rows, broker_rows = [], [], [], []
    start = 0
    for number, phase in enumerate(model.phases, start=1):
        secs = np.arange(start, start + phase.duration_s, dtype=np.int32)
        achieved = min(phase.rate, model.capacity * 0.995)
        rate_per_s = np.full(secs.size, achieved)
        fault = model.fault_at.get(number)
        if fault is not None:
            f0 = start + int(fault)
            down = (secs >= f0) & (secs < f0 + model.fault_outage_s)
            rate_per_s[down] = 0.0
            catch = (secs >= f0 + model.fault_outage_s) & (secs < f0 + 2 * model.fault_outage_s)
            rate_per_s[catch] = achieved * 1.3
            event_rows.append({**kd, "ts": model.start_ts + f0, "second": float(f0), "phase": number,
                               "kind": "fault_start", "fault_id": f"p{number:02d}-f1", "fault_kind": "kill_node",
                               "node": "rabbit1", "detail": None})
            event_rows.append({**kd, "ts": model.start_ts + f0 + 240, "second": float(f0 + 240), "phase": number,
                               "kind": "fault_heal", "fault_id": f"p{number:02d}-f1", "fault_kind": "kill_node",
                               "node": "rabbit1", "detail": None})
        backlog_growth = max(0.0, phase.rate - achieved)
        for worker in range(model.workers):
            share = 1.0 / model.workers
            n = rng.poisson(rate_per_s * share).astype(np.int64)
            scheduled = np.full(secs.size, round(phase.rate * share), dtype=np.int64)
            # Latency: a few ms below capacity, growing with the backlog above it (seconds of queueing).
            queue_s = backlog_growth * (secs - start + 1) / max(achieved, 1.0)
            median_us = model.base_latency_ms * 1000.0 * (1 + 2 * min(phase.rate / model.capacity, 1.0) ** 4) \
                + queue_s * 1e6
            table = pa.table({
                **{k: pa.array([v] * secs.size, type=pa.int32() if k == "repeat" else pa.string())
                   for k, v in kd.items()},
                "worker": pa.array(np.full(secs.size, worker, dtype=np.int32)),
                "second": pa.array(secs),
                "ts": pa.array(model.start_ts + secs.astype(np.float64)),
                "phase": pa.array(np.full(secs.size, number, dtype=np.int32)),
                "warmup": pa.array(secs < start + phase.warmup_s),
                "target_rate": pa.array(np.full(secs.size, phase.rate)),
                "scheduled": pa.array(scheduled),
                "processing_ms": pa.array(np.full(secs.size, 10.0)),
                "published": pa.array(n),
                "confirmed": pa.array(n),
                "nacked": pa.array(np.zeros(secs.size, dtype=np.int64)),
                "returned": pa.array(np.zeros(secs.size, dtype=np.int64)),
                "consumed": pa.array(n),
                "redelivered": pa.array(np.zeros(secs.size, dtype=np.int64)),
                "foreign": pa.array(np.zeros(secs.size, dtype=np.int64)),
                "acked": pa.array(n),
                "in_flight": pa.array(np.minimum(n // 10, 1000)),
                "publish_delay_max_us": pa.array(rng.uniform(200, 2000, secs.size)),
                "publish_delay_hist": _hist_block(rng, n, np.full(secs.size, 300.0), 0.5, 1.5),
                "e2e_hist": _hist_block(rng, n, median_us, 0.35),
                "e2e_max_us": pa.array(median_us * 4.0),
                "confirm_hist": _hist_block(rng, n, median_us * 0.6, 0.3),
                "blocked_ms": pa.array(np.zeros(secs.size)),
                "cpu_s": pa.array(np.full(secs.size, min(0.9, 0.1 + achieved * share * 25e-6))),
                "publishers": pa.array(np.full(secs.size, 25, dtype=np.int32)),
                "consumers": pa.array(np.full(secs.size, 25, dtype=np.int32)),
                # the 2020 workload's client settings: open loop, confirm window and prefetch 1000
                "rate_mode": pa.array(["scheduled"] * secs.size), "latency_basis": pa.array(["intended"] * secs.size),
                "confirms_in_flight": pa.array(np.full(secs.size, 1000, dtype=np.int32)),
                "prefetch": pa.array(np.full(secs.size, 1000, dtype=np.int32)),
                "multi_ack_every": pa.array(np.full(secs.size, 1, dtype=np.int32)),
                "in_flight_max": pa.array(np.minimum(n // 250, 1000)),
                "group": pa.array([records.DEFAULT_GROUP] * secs.size),  # issue 14: the one implicit group
                # each message held for its 10 ms processing; prefetch 1000 is never full: no refills
                "ack_hold_us": pa.array(n * 10_000), "ack_holds": pa.array(n),
                "refill_us": pa.array(np.zeros(secs.size, dtype=np.int64)),
                "refills": pa.array(np.zeros(secs.size, dtype=np.int64)),
            }, schema=records.arrow_schema("client_seconds"))
            objects[raw_layout.raw_part_key(key, "client_seconds", number, worker)] = table
        total = round(achieved * phase.duration_s)
        acc_rows.append({**kd, "phase": number, "published": total, "confirmed": total, "consumed_unique": total,
                         "lost": 0, "duplicates": 0, "redelivered": 0, "reordered": 0})
        phase_rows.append({**kd, "phase": number, "phase_name": phase.name or f"rate-{phase.rate:g}",
                           "start_s": float(start), "duration_s": float(phase.duration_s),
                           "warmup_s": float(phase.warmup_s), "target_rate": phase.rate, "rate_start": phase.rate,
                           "rate_end": phase.rate, "processing_ms_start": 10.0, "processing_ms_end": 10.0,
                           "scenario_start_ts": model.start_ts, "rate_mode": "scheduled",
                           "latency_basis": "intended"})
        for s in range(start, start + phase.duration_s, 5):
            broker_rows.append({**kd, "ts": model.start_ts + s, "second": float(s), "phase": number,
                                "node": "rabbit1", "running": True, "mem_used_bytes": 500_000_000,
                                "mem_limit_bytes": 6_000_000_000, "mem_alarm": False,
                                "disk_free_bytes": 900_000_000_000, "disk_alarm": False,
                                "queue_messages": int(backlog_growth * (s - start)), "queue_messages_ready": 0,
                                "queue_messages_unacked": 0, "publish_rate": achieved, "deliver_rate": achieved})
        objects[raw_layout.raw_part_key(key, "node_seconds", number)] = node_seconds_table(model, number, secs,
                                                                                       achieved, backlog_growth)
        start += phase.duration_s
    objects[raw_layout.raw_part_key(key, "phases")] = pa.Table.from_pylist(phase_rows, records.arrow_schema("phases"))
    objects[raw_layout.raw_part_key(key, "accounting")] = pa.Table.from_pylist(acc_rows,
                                                                           records.arrow_schema("accounting"))
    objects[raw_layout.raw_part_key(key, "events", 1)] = pa.Table.from_pylist(event_rows,
                                                                              records.arrow_schema("events"))
    objects[raw_layout.raw_part_key(key, "broker_samples", 1)] = pa.Table.from_pylist(
        broker_rows, records.arrow_schema("broker_samples"))
    return objects


def node_seconds_table(model: RunModel, phase: int, secs: np.ndarray, achieved: float,
                       backlog_growth: float) -> pa.Table:
    """One phase's node_seconds rows for every node (see the module docstring for the model)."""
    n = secs.size
    parts: dict[str, list[np.ndarray]] = {c: [] for c in records.column_names("node_seconds")}
    load = min(achieved / model.capacity, 1.0)
    per_node_msgs = achieved / model.nodes
    double_write = min(backlog_growth / max(achieved, 1.0), 1.0)
    kd = model.key.as_dict()
    for i in range(model.nodes):
        busy = np.clip(0.1 + 0.85 * load ** 2 + 0.02 * i, 0.0, 1.0)
        write_bytes = per_node_msgs * 1024 * 3 * (1 + double_write)
        net_client = per_node_msgs * 1024 * 2
        figures = {
            "second": secs, "ts": model.start_ts + secs.astype(np.float64), "span_s": 1.0, "phase": phase,
            "node": f"rabbit@rabbit{i + 1}", "target": "aws", "missing": False, "shared_cores": False, "cores": 8,
            "cpu_quota_cores": None,  # an aws node: no scale-model envelope
            "cpu_source": records.CPU_SOURCE_TICKS,  # an aws node's CPU comes from its exporter's counters
            "cpu_user": busy * 0.8, "cpu_system": busy * 0.2, "cpu_iowait": 0.01, "cpu_steal": 0.0, "cpu_busy": busy,
            "cpu_s": busy * 8, "machine_cpu_busy_s": busy * 8, "machine_cores": 8, "mem_rss_bytes": 2 * 10**9,
            "run_queue": 1.0 + 10 * load, "disk_read_bytes_per_s": 0.0, "disk_write_bytes_per_s": write_bytes,
            "disk_read_ops_per_s": 0.0, "disk_write_ops_per_s": write_bytes / 16384, "write_syscalls_per_s": None,
            "fsyncs_per_s": None, "net_in_bytes_per_s": net_client + 2 * per_node_msgs * 1024,
            "net_out_bytes_per_s": net_client + 2 * per_node_msgs * 1024, "client_in_bytes_per_s": net_client,
            "client_out_bytes_per_s": net_client, "internode_in_bytes_per_s": 2 * per_node_msgs * 1024,
            "internode_out_bytes_per_s": 2 * per_node_msgs * 1024, "nic_in_bytes_per_s": None,
            "nic_out_bytes_per_s": None, "raft_written_per_s": per_node_msgs * 3, "raft_snapshot_per_s": 0.0,
            # per volume by role (issue 22): one data volume holds everything in these models
            **{f"{role}_write_{what}_per_s": None for role in VOLUME_ROLES for what in ("bytes", "ops")},
            "data_write_bytes_per_s": write_bytes, "data_write_ops_per_s": write_bytes / 16384,
        }
        for column in parts:
            value = kd[column] if column in kd else figures[column]
            # numpy arrays pass through; scalars (None included) are repeated per second (vectorised: the
            # seed-scale benchmark writes 9-node clusters' rows)
            parts[column].append(value if isinstance(value, np.ndarray) else np.full(n, value, dtype=object))
    schema = records.arrow_schema("node_seconds")
    return pa.Table.from_pydict({c: pa.array(np.concatenate(v), type=schema.field(c).type) for c, v in parts.items()},
                                schema=schema)


def write_objects(store, objects: dict[str, pa.Table]) -> int:
    """Put every object; returns the number of client_seconds rows written."""
    rows = 0
    for key, table in objects.items():
        store.put_parquet(key, table)
        if raw_layout.record_type_of(key) == "client_seconds":
            rows += table.num_rows
    return rows


def campaign_models(spec_path: str, run_id: str, scenario: str, duration_s: int | None, workers: int,
                    configs: Sequence[str] | None = None, phases: int | None = None) -> list[RunModel]:
    """One RunModel per config of a campaign spec; capacities from seed 000 where the shape is known."""
    from sizing.campaign import families, load_campaign

    campaign = load_campaign(spec_path)
    # `isolate: true` steps are one single-phase scenario each (sizing.campaign.steps.isolated_runs): the synthetic run
    # keeps them as the phases of one run, their family, as the benchmarks' seed-scale campaign has always been
    # modelled.
    sc = {s.name: s for s in families(campaign.scenarios)}[scenario]
    rates = list(sc.step_rates or [])[: phases or None]
    d = int(duration_s or sc.step_duration_s or 60)
    warm = int(min(sc.warmup_s, d // 10)) if duration_s else int(sc.warmup_s)
    models = []
    for i, shape in enumerate(campaign.clusters):
        if configs and shape.config_id not in configs:
            continue
        cap = SEED_000_CAPACITY.get(shape.volume.type, {}).get((shape.nodes, shape.instance_type), 30e3 + 5e3 * i)
        fault_at = {p + 1: d * 0.5 for p in range(len(rates))} if sc.faults else {}
        models.append(RunModel(RunKey(campaign.name, shape.config_id, scenario, run_id),
                               tuple(PhasePlan(r, d, warm) for r in rates), workers, cap, fault_at=fault_at, seed=i,
                               nodes=shape.nodes))
    return models


def main(argv: Sequence[str] | None = None) -> int:
    from adapters.objectstore import StoreSpec

    parser = argparse.ArgumentParser(prog="synthetic", description="write a synthetic raw campaign")
    parser.add_argument("--spec", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--scenario", default="increasing-intensity")
    parser.add_argument("--duration-s", type=int, default=None)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--phases", type=int, default=None)
    parser.add_argument("--config", dest="configs", action="append")
    args = parser.parse_args(argv)
    store = StoreSpec.from_env().open()
    rows = 0
    models = campaign_models(args.spec, args.run_id, args.scenario, args.duration_s, args.workers, args.configs,
                             args.phases)
    for model in models:
        rows += write_objects(store, run_objects(model))
    print(json.dumps({"configs": len(models), "client_second_rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
