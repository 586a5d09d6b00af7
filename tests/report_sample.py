"""A small campaign's analysis output written into a bucket, with the column names the report reads.

Stands in for the Spark pipeline (tests/test_spark_report.py checks the report against the real jobs):
`phase_summary` per config, campaign-wide `capacity_repeats`, `leaderboards`, `pareto`, `adverse`,
`repeat_intervals`, `board_intervals`, raw
client_seconds / events / broker_samples (sizing.contract.records schemas) and GX results,
for local-quick as tests/fixtures/report-sample.yaml keeps it (2 configs; `increasing-intensity` 500/1000/2000
msg/s and `broker-kill`).
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

from adapters.objectstore import S3Settings
from sizing.campaign import Campaign, family_phases, load_campaign
from sizing.contract import layout, raw_layout, records
from sizing.contract.layout import RunKey
from sizing.criteria import rules
from sizing.judgement import adverse, recommendation, repeats
from sizing.planning.plan import plan_configs
from sizing.planning.timeline import Timeline, expand
from sizing.resources.cost import cost_per_1000_msgs
from tests.spark_records import series_tables

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "tests" / "fixtures" / "report-sample.yaml"  # local-quick as the figures below assume it
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
    (N3, "broker-kill", 1): [985.0, 990.0, 982.0],
}
P99 = {(N1, "increasing-intensity"): [12.0, 30.0, 2400.0], (N3, "increasing-intensity"): [15.0, 22.0, 95.0],
       (N1, "broker-kill"): [9500.0], (N3, "broker-kill"): [640.0]}
RECOVERY = {N1: [6.0, 7.0, 5.5], N3: [2.0, 2.5, 1.5]}


def _put_parquet(settings: S3Settings, key: str, table: pa.Table) -> None:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    settings.client().put_object(Bucket=settings.bucket, Key=key, Body=sink.getvalue())


def phase_summary_rows(repeats: int = 1) -> pd.DataFrame:
    """phase_summary rows with the analysis job's column names and its `matched_target` rule."""
    campaign = load_campaign(SPEC)
    slo = campaign.target.p99_latency_ms
    rows = []
    for (config_id, scenario_name, phase), achieved in ACHIEVED.items():
        scenario = campaign.scenario(scenario_name)
        target = scenario.step_rates[phase - 1]
        p99 = P99[(config_id, scenario_name)][phase - 1]
        for repeat in range(1, repeats + 1):
            rate = achieved[repeat - 1]
            jitter = 1 + 0.05 * (repeat - 1)
            consume = rate * 0.999
            fault = scenario_name == "broker-kill"
            row = {
                "campaign": campaign.name, "config_id": config_id, "scenario": scenario_name, "run_id": RUN_ID,
                "repeat": repeat, "phase": phase, "phase_name": f"rate-{target:g}", "target_rate": target,
                "confirm_rate": rate, "consume_rate": consume, "publish_rate": rate,
                "e2e_p50_ms": p99 * 0.08 * jitter, "e2e_p75_ms": p99 * 0.2 * jitter, "e2e_p95_ms": p99 * 0.6 * jitter,
                "e2e_p99_ms": p99 * jitter, "e2e_p999_ms": p99 * 1.8 * jitter, "e2e_max_ms": p99 * 3 * jitter,
                "matched_target": rate >= 0.98 * target and consume >= 0.98 * target and p99 * jitter <= slo,
                "slo_p99_ms": slo, "valid": True, "invalid_reason": None,
                "backlog_max": int(max(0.0, (target - rate) * 12.0) + 50), "lost": 0, "duplicates": 0,
                "faults": 1 if fault else 0,
                "time_to_recover_s": RECOVERY[config_id][repeat - 1] if fault else math.nan,
                "recovered": True if fault else None,
                # n3 never dipped: its lowest 5 s mean after the kill was a catch-up burst above the pre-fault rate
                "worst_dip_ratio": (0.0 if config_id == N1 else 1.02) if fault else math.nan,
                "broker_queue_max": int(max(0.0, (target - rate) * 12.0) + 50),
                "broker_mem_max_bytes": int((120 + target * 0.02) * 2**20),
                "broker_mem_max_fraction": (120 + target * 0.02) / 400, "broker_alarm": False,
                "broker_node_down_seen": fault,
                # the killed node, back 6 s after its restart (n1) or at once (n3)
                "broker_nodes_down": "rabbit1@localhost" if fault else None,
                "broker_whole_after_heal_s": (6.0 if config_id == N1 else 0.0) if fault else math.nan,
                # what phase_summary derives from node_seconds: n1 runs out of CPU where it stops matching
                "cpu_busiest_mean": min(1.0, 0.1 + rate / CAPACITY[config_id] * 0.85), "start_s": (phase - 1) * 15.0,
                "bottleneck": ("cpu" if config_id == N1 and target > CAPACITY[config_id] else "none"),
                "bottleneck_detail": "cpu: rabbit1@localhost mean 0.95" if config_id == N1 else None,
                "disk_write_kb_per_op": 4.5 * phase,  # bytes per device write grow with the intensity (Figs 7/9)
            }
            rows.append(row)
    return pd.DataFrame(rows)


def capacity_repeat_rows(summary: pd.DataFrame, slo: float) -> pd.DataFrame:
    """The capacity_repeats table as the Spark job computes it: per repeat, the top carried rate over the
    phases sizing.criteria.rules.counts_toward_capacity lets count (the predicates evaluate on pandas Series too)."""
    ideal = summary[summary["scenario"] == "increasing-intensity"]
    ok = ideal[rules.counts_toward_capacity(ideal["valid"], ideal["e2e_p99_ms"], slo)]
    ok = ok.assign(carried=ok[["confirm_rate", "consume_rate"]].min(axis=1),
                   matched_rate=ok["target_rate"].where(ok["matched_target"]))
    conclusive = ideal[rules.conclusive(ideal["valid"])]
    any_latency = conclusive[["confirm_rate", "consume_rate"]].min(axis=1).groupby(
        [conclusive["config_id"], conclusive["repeat"]]).max()
    rows = []
    for (campaign, config_id, run_id, repeat), group in ok.groupby(["campaign", "config_id", "run_id", "repeat"]):
        top = group.loc[group["carried"].idxmax()]
        rows.append({"campaign": campaign, "config_id": config_id, "run_id": run_id, "repeat": int(repeat),
                     "top_matched_throughput": float(top["carried"]), "top_matched_phase": top["phase_name"],
                     "max_matched_target_rate": group["matched_rate"].max(), "capacity_phases": len(group),
                     "top_throughput_any_latency": float(any_latency[(config_id, repeat)])})
    return pd.DataFrame(rows, columns=records.table_columns("capacity_repeats"))


def leaderboard_rows(per_repeat: pd.DataFrame, campaign_name: str, monthly: dict[str, float],
                     target_rate: float) -> pd.DataFrame:
    """The wide leaderboards table as the Spark job computes it from capacity_repeats: the median of the repeats'
    tops; the matched intensity is the one every repeat matched."""
    top = per_repeat.groupby("config_id")["top_matched_throughput"].median()
    max_matched = per_repeat.groupby("config_id")["max_matched_target_rate"].min()
    rows = []
    for config_id, cost in monthly.items():
        t, m = top.get(config_id), max_matched.get(config_id)
        met = m is not None and m >= target_rate
        rows.append({"campaign": campaign_name, "run_id": RUN_ID, "queue_type": "quorum", "config_id": config_id,
                     "monthly_cost": cost, "currency": "USD", "top_matched_throughput": t,
                     "max_matched_target_rate": m, "campaign_target_rate": target_rate, "met_target": met,
                     "cost_per_1k_at_top": cost_per_1000_msgs(cost, t) if t else None,
                     "cost_per_1k_at_target": cost_per_1000_msgs(cost, target_rate) if met else None})

    def ranks(column: str, descending: bool) -> dict[str, int]:
        present = sorted((r for r in rows if r[column] is not None),
                         key=lambda r: (-r[column] if descending else r[column], r["config_id"]))
        return {r["config_id"]: i for i, r in enumerate(present, start=1)}

    at_top, at_target = ranks("cost_per_1k_at_top", False), ranks("cost_per_1k_at_target", False)
    capacity = ranks("top_matched_throughput", True)
    for r in rows:
        r.update(rank_at_top=at_top.get(r["config_id"]), rank_at_target=at_target.get(r["config_id"]),
                 capacity_rank=capacity.get(r["config_id"]), pareto=True)
    return pd.DataFrame(rows)


def sample_board(campaign: Campaign, summary: pd.DataFrame) -> pd.DataFrame:
    """The leaderboards rows of `summary` (capacity_repeat_rows, leaderboard_rows), priced with the plan's costs."""
    monthly = {c.config_id: c.monthly_cost for c in plan_configs(campaign)}
    return leaderboard_rows(capacity_repeat_rows(summary, campaign.target.p99_latency_ms), campaign.name, monthly,
                            campaign.target.rate)


def pareto_rows(board: pd.DataFrame) -> pd.DataFrame:
    return board[board["pareto"]][records.table_columns("pareto")].reset_index(drop=True)


def adverse_rows(summary: pd.DataFrame, campaign: Campaign) -> pd.DataFrame:
    """The Spark `adverse` table, by the same pure verdict code the leaderboards step runs
    (sizing.judgement.adverse.judge)."""
    rows = []
    for scenario in (s for s in campaign.scenarios if rules.is_adverse(s)):
        for (campaign_name, config_id), part in summary[summary["scenario"] == scenario.name].groupby(
                ["campaign", "config_id"]):
            phases = [{k: (None if pd.isna(v) else v) for k, v in r.items()} for r in part.to_dict("records")]
            rows.append({"campaign": campaign_name, "run_id": RUN_ID, "config_id": config_id,
                         **adverse.judge(scenario, phases, campaign.target.rate)})
    return pd.DataFrame(rows, columns=records.table_columns("adverse"))


def recommendation_rows(board: pd.DataFrame, adverse: pd.DataFrame | None, summary: pd.DataFrame,
                        campaign: Campaign) -> pd.DataFrame:
    """The Spark `recommendation` table, by the same pure code the leaderboards step runs on the same rows
    (sizing.judgement.recommendation.from_tables, table_rows)."""
    def plain(frame: pd.DataFrame | None) -> list[dict]:
        return [] if frame is None else [{k: (None if not isinstance(v, str) and pd.isna(v) else v)
                                          for k, v in r.items()} for r in frame.to_dict("records")]

    standings = recommendation.from_tables(campaign, plain(board), plain(adverse), plain(summary))
    rows = recommendation.table_rows(standings)
    return pd.DataFrame([{"campaign": campaign.name, "run_id": RUN_ID, **r} for r in rows],
                        columns=records.table_columns("recommendation"))


def repeat_interval_rows(summary: pd.DataFrame, campaign: Campaign, run_id: str = RUN_ID) -> pd.DataFrame:
    """The Spark `repeat_intervals` table, by the same pure code the leaderboards step runs on the same rows
    (sizing.judgement.repeats.phase_intervals, isolated runs as the phases of their scenario)."""
    rows = repeats.phase_intervals(summary.to_dict("records"), phases=family_phases(campaign.scenarios))
    return pd.DataFrame([{"campaign": campaign.name, "run_id": run_id, **r} for r in rows],
                        columns=records.table_columns("repeat_intervals"))


def board_interval_rows(board: pd.DataFrame, per_repeat: pd.DataFrame, campaign: Campaign) -> pd.DataFrame:
    """The Spark `board_intervals` table, by the leaderboards step's pure code
    (sizing.judgement.repeats.board_intervals)."""
    entries = repeats.board_entries(board.to_dict("records"), campaign.target.rate)
    monthly = dict(zip(board["config_id"], board["monthly_cost"], strict=True))
    rows = repeats.board_intervals(entries, per_repeat.to_dict("records"), monthly)
    return pd.DataFrame([{"campaign": campaign.name, "run_id": RUN_ID, **r} for r in rows],
                        columns=records.table_columns("board_intervals"))


CAPACITY = {N1: 1620.0, N3: 1985.0}  # publish capacity, msg/s


def _raw_tables(campaign_name: str, config_id: str, timeline: Timeline, repeat: int,
                nodes: int) -> dict[str, pd.DataFrame]:
    """Per-second client records, broker samples every 2 s and fault events along the scenario timeline."""
    key = {"campaign": campaign_name, "config_id": config_id, "scenario": timeline.scenario, "run_id": RUN_ID,
           "repeat": repeat}
    fault = (timeline.faults[0].at_s, timeline.faults[0].heal_at_s) if timeline.faults else None
    seconds, events, samples, node_rows = [], [], [], []
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
        for n in range(1, nodes + 1):  # node_seconds: CPU follows the load; node 1 has no figures while killed
            node_down = down and n == 1
            node_rows.append({**key, "second": s, "phase": phase, "node": f"rabbit{n}@localhost",
                              "missing": node_down, "cpu_busy": None if node_down else
                              min(1.0, 0.1 + publish / CAPACITY[config_id] * 0.85),
                              "net_in_bytes_per_s": None if node_down else publish * 2048.0,
                              "net_out_bytes_per_s": None if node_down else publish * 2048.0,
                              "client_in_bytes_per_s": None if node_down else publish * 1024.0,
                              "client_out_bytes_per_s": None if node_down else consumed * 1024.0,
                              "disk_write_bytes_per_s": None if node_down else publish * 1024.0,
                              "disk_write_ops_per_s": None})
    for phase in timeline.phases:
        events.append({**key, "second": phase.start_s, "phase": phase.number, "kind": "phase_start",
                       "fault_id": None, "fault_kind": None, "node": None})
    for f in timeline.faults:
        for kind, at in (("fault_start", f.at_s), ("fault_heal", f.heal_at_s)):
            events.append({**key, "second": at, "phase": f.phase, "kind": kind, "fault_id": f.fault_id,
                           "fault_kind": f.kind, "node": f"rabbit{f.node}@localhost"})
    return {"client_seconds": pd.DataFrame(seconds), "events": pd.DataFrame(events),
            "broker_samples": pd.DataFrame(samples), "node_seconds": pd.DataFrame(node_rows)}


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


def gx_result(batch: str, config_id: str, failed_column: str | None = None) -> dict:
    """A stored validation result, built by the validate job's own document builder."""
    from spark_jobs.lib.validation import Outcome

    stats = {"evaluated_expectations": 2 if failed_column else 1, "successful_expectations": 1}
    failures = [f"raw_client_seconds: ExpectColumnValuesToBeBetween(column={failed_column})"] if failed_column else []
    outcome = Outcome(not failures, {"raw_client_seconds": {"success": not failures, "statistics": stats}}, failures)
    return outcome.document(batch, "local-quick", config_id, RUN_ID)


def write_sample(settings: S3Settings, repeats: int = 1, failed_validation: bool = False) -> pd.DataFrame:
    """Write the sample campaign's tables and raw series into the bucket; returns the phase_summary."""
    campaign = load_campaign(SPEC)
    configs = plan_configs(campaign)
    monthly = {c.config_id: c.monthly_cost for c in configs}
    summary = phase_summary_rows(repeats)
    for config_id, rows in summary.groupby("config_id"):
        _put_parquet(settings, layout.table_prefix("phase_summary", campaign.name, config_id, RUN_ID)
                     + "part-00000.parquet",
                     pa.Table.from_pandas(rows.reset_index(drop=True), preserve_index=False))
    target, slo = campaign.target.rate, campaign.target.p99_latency_ms
    per_repeat = capacity_repeat_rows(summary, slo)
    board = leaderboard_rows(per_repeat, campaign.name, monthly, target)
    for table, frame in (("capacity_repeats", per_repeat), ("leaderboards", board), ("pareto", pareto_rows(board)),
                         ("adverse", adverse_rows(summary, campaign)),
                         ("recommendation", recommendation_rows(board, adverse_rows(summary, campaign), summary,
                                                                campaign)),
                         ("repeat_intervals", repeat_interval_rows(summary, campaign)),
                         ("board_intervals", board_interval_rows(board, per_repeat, campaign))):
        _put_parquet(settings, layout.table_prefix(table, campaign.name, run_id=RUN_ID) + "part-00000.parquet",
                     pa.Table.from_pandas(frame, preserve_index=False))
    client = settings.client()
    for plan in configs:
        for scenario in campaign.scenarios:
            timeline = expand(scenario, plan.shape.nodes, campaign.seed)
            for repeat in range(1, repeats + 1):
                tables = _raw_tables(campaign.name, plan.config_id, timeline, repeat, plan.shape.nodes)
                run = RunKey(campaign.name, plan.config_id, scenario.name, RUN_ID, repeat)
                for record_type, df in tables.items():
                    for phase, part in df.groupby("phase"):
                        _put_parquet(settings, raw_layout.raw_part_key(run, record_type, phase=int(phase)),
                                     _to_arrow(part, record_type))
                # the per-second tables the analysis writes beside phase_summary (what the charts read)
                raw = {record_type: _to_arrow(df, record_type) for record_type, df in tables.items()}
                for name, rows in series_tables(raw).items():
                    _put_parquet(settings, layout.table_prefix(name, campaign.name, plan.config_id, RUN_ID)
                                 + f"part-{scenario.name}-{repeat}.parquet", rows)
        for batch in ("raw", "phase_summary"):
            bad = failed_validation and batch == "raw" and plan.config_id == N1
            doc = gx_result(batch, plan.config_id, "confirmed" if bad else None)
            client.put_object(Bucket=settings.bucket, Body=json.dumps(doc).encode(),
                              Key=layout.validation_key(batch, campaign.name, plan.config_id, RUN_ID))
    return summary
