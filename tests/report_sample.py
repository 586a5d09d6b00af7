"""A small campaign's analysis output written into a bucket, with the column names the report reads.

Stands in for the Spark pipeline until it is in main: `phase_summary` per config, campaign-wide
`leaderboards`, raw client_seconds / events / broker_samples (sizing.records schemas) and GX results,
for campaigns/local-quick.yaml (2 configs; `increasing-intensity` 500/1000/2000 msg/s and `broker-kill`).
The figures are plausible, chosen so that the verdict is clear: the 1-node cluster cannot survive
losing its only node, the 3-node one can.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sizing import layout, records
from sizing.cost import cost_per_1000_msgs
from sizing.layout import RunKey
from sizing.plan import plan_configs
from sizing.spec import load_campaign
from sizing.storage import S3Settings
from sizing.timeline import Timeline, expand

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "campaigns" / "local-quick.yaml"
RUN_ID = "manual__2026-01-01T00-00-00"
N1, N3 = "n1-c5.2xlarge-gp2", "n3-c5.2xlarge-gp2"

# (config, scenario, phase) -> achieved rate per repeat (repeat 1 first) and p99 ms
ACHIEVED = {
    (N1, "increasing-intensity", 1): [500.0, 499.0, 501.0],
    (N1, "increasing-intensity", 2): [998.0, 990.0, 1000.0],
    (N1, "increasing-intensity", 3): [1620.0, 1580.0, 1650.0],
    (N3, "increasing-intensity", 1): [499.0, 500.0, 500.0],
    (N3, "increasing-intensity", 2): [1000.0, 997.0, 999.0],
    (N3, "increasing-intensity", 3): [1985.0, 1980.0, 1990.0],
    (N1, "broker-kill", 1): [610.0, 640.0, 600.0],
    (N3, "broker-kill", 1): [985.0, 990.0, 978.0],
}
P99 = {(N1, "increasing-intensity"): [12.0, 30.0, 2400.0], (N3, "increasing-intensity"): [15.0, 22.0, 95.0],
       (N1, "broker-kill"): [9500.0], (N3, "broker-kill"): [640.0]}
RECOVERY = {N1: [6.0, 7.0, 5.5], N3: [2.0, 2.5, 1.5]}


def _put_parquet(settings: S3Settings, key: str, table: pa.Table) -> None:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    settings.client().put_object(Bucket=settings.bucket, Key=key, Body=sink.getvalue())


def phase_summary_rows(repeats: int = 1) -> pd.DataFrame:
    campaign = load_campaign(SPEC)
    rows = []
    for (config_id, scenario_name, phase), achieved in ACHIEVED.items():
        scenario = campaign.scenario(scenario_name)
        target = scenario.step_rates[phase - 1]
        p99 = P99[(config_id, scenario_name)][phase - 1]
        for repeat in range(1, repeats + 1):
            rate = achieved[repeat - 1]
            jitter = 1 + 0.05 * (repeat - 1)
            row = {
                "campaign": campaign.name, "config_id": config_id, "scenario": scenario_name, "run_id": RUN_ID,
                "repeat": repeat, "phase": phase, "phase_name": f"rate-{target:g}", "target_rate": target,
                "achieved_rate": rate, "consume_rate": rate * 0.999,
                "e2e_p50_ms": p99 * 0.08 * jitter, "e2e_p75_ms": p99 * 0.2 * jitter, "e2e_p95_ms": p99 * 0.6 * jitter,
                "e2e_p99_ms": p99 * jitter, "e2e_p999_ms": p99 * 1.8 * jitter, "e2e_max_ms": p99 * 3 * jitter,
                "matched": rate >= 0.98 * target, "slo_met": p99 * jitter < campaign.target.p99_latency_ms,
                "backlog_max": max(0.0, (target - rate) * 12.0) + 50, "lost": 0, "duplicates": 0, "reordered": 0,
                "recovery_s": RECOVERY[config_id][repeat - 1] if scenario_name == "broker-kill" else math.nan,
                "valid": True, "invalid_reason": None,
            }
            rows.append(row)
    return pd.DataFrame(rows)


def leaderboard_rows(summary: pd.DataFrame, campaign_name: str, monthly: dict[str, float],
                     target_rate: float) -> pd.DataFrame:
    """What the Spark leaderboards job computes, over the mean of repeats of the ideal-conditions scenario."""
    ideal = summary[summary["scenario"] == "increasing-intensity"]
    mean = ideal.groupby(["config_id", "phase"]).agg(target_rate=("target_rate", "first"),
                                                     achieved_rate=("achieved_rate", "mean"),
                                                     matched=("matched", "all"), slo_met=("slo_met", "all"))
    mean = mean.reset_index()
    out = []

    def board(name: str, values: dict[str, float], ascending: bool) -> None:
        ordered = sorted(values.items(), key=lambda kv: kv[1] if ascending else -kv[1])
        for rank, (config_id, value) in enumerate(ordered, start=1):
            is_cost = name.startswith("cost")
            rate = {"cost_at_top": top.get(config_id), "cost_at_target": target_rate}.get(name, value)
            out.append({"campaign": campaign_name, "board": name, "rank": rank, "config_id": config_id,
                        "scenario": "increasing-intensity", "rate": float(rate), "monthly_cost": monthly[config_id],
                        "cost_per_1000": value if is_cost else cost_per_1000_msgs(monthly[config_id], rate)})

    top = mean.groupby("config_id")["achieved_rate"].max().to_dict()
    ok = mean[mean["matched"] & mean["slo_met"]]
    top_matched = ok.groupby("config_id")["target_rate"].max().to_dict()
    board("top_matched_throughput", top_matched, ascending=False)
    board("top_throughput", top, ascending=False)
    board("cost_at_top", {c: cost_per_1000_msgs(monthly[c], r) for c, r in top.items()}, ascending=True)
    at_target = ok[ok["target_rate"] >= target_rate]["config_id"].unique()
    board("cost_at_target", {c: cost_per_1000_msgs(monthly[c], target_rate) for c in at_target}, ascending=True)
    return pd.DataFrame(out)


CAPACITY = {N1: 1620.0, N3: 1985.0}  # publish capacity, msg/s


def _raw_tables(campaign_name: str, config_id: str, timeline: Timeline, repeat: int,
                nodes: int) -> dict[str, pd.DataFrame]:
    """Per-second client records, broker samples every 2 s and fault events along the scenario timeline."""
    key = {"campaign": campaign_name, "config_id": config_id, "scenario": timeline.scenario, "run_id": RUN_ID,
           "repeat": repeat}
    fault = (timeline.faults[0].at_s, timeline.faults[0].heal_at_s) if timeline.faults else None
    seconds, events, samples = [], [], []
    backlog = 0.0
    for s in range(int(timeline.duration_s)):
        target = timeline.rate_at(s)
        phase = timeline.phase_at(s).number
        down = fault is not None and fault[0] <= s < fault[1]
        since_heal = s - fault[1] if fault and s >= fault[1] else None
        publish = min(target, CAPACITY[config_id])
        drain = 1.3 * target
        if down:
            publish, drain = (0.0, 0.0) if nodes == 1 else (0.85 * target, 0.55 * target)
        elif since_heal is not None and since_heal < 5 and nodes == 1:
            publish, drain = target * (0.3 + 0.14 * since_heal), target * (0.2 + 0.2 * since_heal)
        consumed = min(drain, publish + backlog)
        backlog = max(0.0, backlog + publish - consumed)
        for worker in (0, 1):
            seconds.append({**key, "worker": worker, "second": s, "phase": phase, "target_rate": target,
                            "published": int(publish / 2), "confirmed": int(publish / 2),
                            "consumed": int(consumed / 2)})
        if s % 2 == 0:
            for n in range(1, nodes + 1):
                node_down = down and n == 1
                samples.append({**key, "second": float(s), "phase": phase, "node": f"rabbit{n}@localhost",
                                "running": not node_down, "mem_used_bytes": None if node_down else
                                int((90 + 10 * n + publish * 0.02 + backlog * 0.02) * 2**20),
                                "mem_limit_bytes": (400 * 2**20), "mem_alarm": False, "disk_alarm": False,
                                "queue_messages": 0 if node_down else int(backlog / (nodes - 1 if down else nodes))})
    for phase in timeline.phases:
        events.append({**key, "second": phase.start_s, "phase": phase.number, "kind": "phase_start",
                       "fault_id": None, "fault_kind": None, "node": None})
    for f in timeline.faults:
        for kind, at in (("fault_start", f.at_s), ("fault_heal", f.heal_at_s)):
            events.append({**key, "second": at, "phase": f.phase, "kind": kind, "fault_id": f.fault_id,
                           "fault_kind": f.kind, "node": f"rabbit{f.node}@localhost"})
    return {"client_seconds": pd.DataFrame(seconds), "events": pd.DataFrame(events),
            "broker_samples": pd.DataFrame(samples)}


def _to_arrow(df: pd.DataFrame, record_type: str) -> pa.Table:
    schema = records.arrow_schema(record_type)
    full = {}
    for f in schema:
        if f.name in df.columns:
            values = [None if isinstance(v, float) and math.isnan(v) else v for v in df[f.name].tolist()]
            if pa.types.is_integer(f.type):
                values = [None if v is None else int(v) for v in values]
            full[f.name] = pa.array(values, type=f.type)
        else:  # columns the report does not read: zero / empty values of the right type
            full[f.name] = pa.array([None if f.nullable else _zero(f.type)] * len(df), type=f.type)
    return pa.table(full, schema=schema)


def _zero(arrow_type: pa.DataType):
    if pa.types.is_string(arrow_type):
        return ""
    if pa.types.is_binary(arrow_type):
        return b""
    if pa.types.is_boolean(arrow_type):
        return False
    return 0


def gx_result(success: bool, failed_column: str | None = None) -> dict:
    results = [{"success": True, "expectation_config": {"type": "expect_column_values_to_not_be_null",
                                                        "kwargs": {"column": "config_id"}}}]
    if failed_column:
        results.append({"success": False, "expectation_config": {"type": "expect_column_values_to_be_between",
                                                                 "kwargs": {"column": failed_column}}})
    return {"success": success, "statistics": {"evaluated_expectations": len(results),
                                               "successful_expectations": sum(r["success"] for r in results)},
            "results": results}


def write_sample(settings: S3Settings, repeats: int = 1, failed_validation: bool = False) -> pd.DataFrame:
    """Write the sample campaign's tables and raw series into the bucket; returns the phase_summary."""
    campaign = load_campaign(SPEC)
    configs = plan_configs(campaign)
    monthly = {c.config_id: c.monthly_cost for c in configs}
    summary = phase_summary_rows(repeats)
    for config_id, rows in summary.groupby("config_id"):
        _put_parquet(settings, layout.table_prefix("phase_summary", campaign.name, config_id) + "part-00000.parquet",
                     pa.Table.from_pandas(rows.reset_index(drop=True), preserve_index=False))
    boards = leaderboard_rows(summary, campaign.name, monthly, campaign.target.rate)
    _put_parquet(settings, layout.table_prefix("leaderboards", campaign.name) + "part-00000.parquet",
                 pa.Table.from_pandas(boards, preserve_index=False))
    client = settings.client()
    for plan in configs:
        for scenario in campaign.scenarios:
            timeline = expand(scenario, plan.shape.nodes, campaign.seed)
            for repeat in range(1, repeats + 1):
                tables = _raw_tables(campaign.name, plan.config_id, timeline, repeat, plan.shape.nodes)
                run = RunKey(campaign.name, plan.config_id, scenario.name, RUN_ID, repeat)
                for record_type, df in tables.items():
                    for phase, part in df.groupby("phase"):
                        _put_parquet(settings, layout.raw_part_key(run, record_type, phase=int(phase)),
                                     _to_arrow(part, record_type))
        for batch in ("raw", "phase_summary"):
            bad = failed_validation and batch == "raw" and plan.config_id == N1
            doc = gx_result(not bad, "confirmed" if bad else None)
            client.put_object(Bucket=settings.bucket, Body=json.dumps(doc).encode(),
                              Key=layout.validation_key(batch, campaign.name, plan.config_id, RUN_ID))
    return summary
