"""End to end against the S3-compatible server: raw records -> phase_summary -> leaderboards -> GX."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sizing import layout
from sizing.layout import RunKey
from sizing.spec import load_campaign
from spark_jobs import leaderboards, phase_summary, validate
from spark_jobs.s3source import read_objects
from spark_jobs.store import StoreSpec
from spark_jobs.synthetic import PhasePlan, RunModel, run_objects, write_objects
from spark_jobs.tables import PHASE_SUMMARY_DDL

pytestmark = pytest.mark.spark

SPEC = Path(__file__).resolve().parent.parent / "campaigns" / "local-quick.yaml"
CAMPAIGN = load_campaign(SPEC)
SMALL, BIG = "n1-c5.2xlarge-gp2", "n3-c5.2xlarge-gp2"


def write_run(store, config: str, scenario: str, run_id: str, capacity: float) -> None:
    timeline = [p for s in CAMPAIGN.scenarios if s.name == scenario for p in s.step_rates or ()]
    sc = CAMPAIGN.scenario(scenario)
    faults = {1: 9.0} if sc.faults else {}
    model = RunModel(RunKey(CAMPAIGN.name, config, scenario, run_id),
                     tuple(PhasePlan(rate, int(sc.step_duration_s), int(sc.warmup_s)) for rate in timeline),
                     workers=2, capacity=capacity, fault_at=faults, fault_outage_s=3, seed=len(config))
    write_objects(store, run_objects(model))


def test_raw_to_tables_validated_idempotent_and_corruption_fails(spark, s3, tmp_path):
    spec = StoreSpec.from_env()
    assert spec.kind == "s3" and spec.endpoint_url
    store = spec.open()
    for config, capacity in ((SMALL, 1500.0), (BIG, 5000.0)):
        for scenario in ("increasing-intensity", "broker-kill"):
            write_run(store, config, scenario, "R1", capacity)

    rules = phase_summary.Rules(slo_p99_ms=CAMPAIGN.target.p99_latency_ms)
    phase_summary.run(spark, spec, CAMPAIGN.name, [SMALL, BIG], ["R1"], rules)
    tables = leaderboards.run(spark, spec, CAMPAIGN)

    summary = read_objects(spark, spec, [layout.table_prefix("phase_summary", CAMPAIGN.name)], PHASE_SUMMARY_DDL)
    rows = {(r["config_id"], r["scenario"], r["phase"]): r for r in summary.collect()}
    assert len(rows) == 2 * (3 + 1)
    assert rows[(SMALL, "increasing-intensity", 3)]["matched_target"] is False  # 2000 msg/s on a 1500 msg/s node
    assert rows[(BIG, "increasing-intensity", 3)]["matched_target"] is True
    assert rows[(BIG, "broker-kill", 1)]["faults"] == 1
    board = {r["config_id"]: r for r in tables["leaderboards"].collect()}
    # The 3-node cluster carries more, the 1-node one is cheaper per 1000 msg/s ($344.80/1.5k vs $1034.40/2k).
    assert board[BIG]["capacity_rank"] == 1 and board[SMALL]["rank_at_top"] == 1
    assert board[SMALL]["top_matched_throughput"] < board[BIG]["top_matched_throughput"]
    assert board[BIG]["met_target"] is True and board[BIG]["pareto"] and board[SMALL]["pareto"]

    docs = tmp_path / "docs"
    for batch, config in (("raw", SMALL), ("raw", BIG), ("phase_summary", SMALL), ("leaderboards", "all")):
        outcome = validate.run(spark, spec, batch, CAMPAIGN, config, "R1", str(docs))
        assert outcome.success, outcome.message()
        result = json.loads(store.get(layout.validation_key(batch, CAMPAIGN.name, config, "R1")))
        assert result["success"] is True and result["results"]
    assert list(docs.rglob("index.html")), "Data Docs were not built"

    # Re-running one config replaces exactly its partition: same rows, no duplicates, other config untouched.
    big_objects = store.list(layout.table_prefix("phase_summary", CAMPAIGN.name, BIG))
    phase_summary.run(spark, spec, CAMPAIGN.name, [SMALL], ["R1"], rules)
    again = read_objects(spark, spec, [layout.table_prefix("phase_summary", CAMPAIGN.name)], PHASE_SUMMARY_DDL)
    assert again.count() == len(rows)
    assert again.select("config_id", "scenario", "run_id", "phase").distinct().count() == len(rows)
    assert store.list(layout.table_prefix("phase_summary", CAMPAIGN.name, BIG)) == big_objects

    # A corrupted batch: a worker that consumed more than was ever published, and a phase with no records.
    key = RunKey(CAMPAIGN.name, BIG, "increasing-intensity", "BAD")
    write_run(store, BIG, "increasing-intensity", "BAD", 5000.0)
    part = layout.raw_part_key(key, "client_seconds", 1, 0)
    table = store.read_parquet(part)
    table = table.set_column(table.schema.get_field_index("consumed"), "consumed",
                             __import__("pyarrow").compute.multiply(table.column("consumed"), 50))
    store.put_parquet(part, table)
    for worker in (0, 1):
        store.delete([layout.raw_part_key(key, "client_seconds", 3, worker)])
    outcome = validate.run(spark, spec, "raw", CAMPAIGN, BIG, "BAD", None)
    assert not outcome.success
    text = outcome.message()
    assert "expect_column_pair_values_a_to_be_greater_than_b" in text and "run_consumed" in text
    assert "in_client_seconds" in text
    assert json.loads(store.get(layout.validation_key("raw", CAMPAIGN.name, BIG, "BAD")))["success"] is False
