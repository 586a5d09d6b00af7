"""Issue 24, history: two runs of a campaign, then a backfill of one config of the first, through the analysis job
the DAG submits (spark_jobs/jobs/analysis.py) against the S3-compatible server. Both runs stay queryable; the backfill
replaces exactly the backfilled config's rows of its run (new objects, the new figures) and touches nothing else of
either run: every other table object keeps its key and its ETag (the object store's own content hash, an
independent check of "not rewritten"), the run's campaign-wide rows of the other config keep their values, and the
`runs` table lists both runs with what their manifests recorded.

Raw records: synthetic (spark_jobs.tools.synthetic, the load generator's layout and schema, written by its
recorder) with a capacity per config and run, so which rows changed is known by construction; manifests as the load
generator writes them (loadgen.runner: status, times, versions read from the broker, spec hash, code commit)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.objectstore import StoreSpec
from app.history import run_tables, stored_run_records
from sizing.campaign import load_campaign
from sizing.contract import layout, raw_layout, records
from sizing.contract.layout import RunKey, RunRef
from sizing.judgement.comparison import compare_runs
from spark_jobs.jobs import analysis, query
from spark_jobs.lib import gate
from spark_jobs.lib.tableio import read_table
from spark_jobs.tools.synthetic import PhasePlan, RunModel, run_objects
from tests.spark_records import write_with_loadgen_recorder

pytestmark = pytest.mark.spark

SPEC = Path(__file__).resolve().parent / "fixtures" / "report-sample.yaml"  # local-quick with 500/1000/2000 steps
CAMPAIGN = load_campaign(SPEC)
SMALL, BIG = "n1-c5.2xlarge-gp2", "n3-c5.2xlarge-gp2"
SCENARIOS = ("increasing-intensity", "broker-kill")
STARTED = {"R1": 1_700_000_000.0, "R2": 1_700_090_000.0}


def write_run(s3, out_dir: Path, config: str, run_id: str, capacity: float, erlang: str = "25.2.3") -> None:
    """Every scenario of one config of one run (one repeat), and each load run's manifest, as the generator writes
    them."""
    store = StoreSpec.from_env().open()
    for scenario_name in SCENARIOS:
        scenario = CAMPAIGN.scenario(scenario_name)
        key = RunKey(CAMPAIGN.name, config, scenario_name, run_id)
        model = RunModel(key, tuple(PhasePlan(rate, int(scenario.step_duration_s), int(scenario.warmup_s))
                                    for rate in scenario.step_rates), workers=2, capacity=capacity,
                         fault_at={1: 9.0} if scenario.faults else {}, fault_outage_s=3, seed=len(config))
        write_with_loadgen_recorder(run_objects(model), key, out_dir / run_id / config, s3)
        manifest = {**key.as_dict(), "status": "complete", "started_at": STARTED[run_id],
                    "ended_at": STARTED[run_id] + 600.0, "spec_hash": CAMPAIGN.spec_hash, "code_commit": "abc123",
                    "versions": {"python": "3.11.2", "pika": "1.3.2", "rabbitmq": "3.10.8", "erlang": erlang},
                    "config": {"config_id": config, "instance_type": "c5.2xlarge"}}
        store.put(raw_layout.manifest_key(key), json.dumps(manifest).encode())


def table_objects(s3) -> dict[str, str]:
    """Every table object's key -> ETag."""
    client = s3.client()
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=s3.bucket, Prefix="tables/")
    return {o["Key"]: o["ETag"] for page in pages for o in page.get("Contents", [])}


def rows(spark, spec, table: str, run_id: str) -> dict:
    return {r["config_id"]: r.asDict() for r in read_table(spark, spec, table, CAMPAIGN.name, run_id=run_id).collect()}


def analyse(*args: str) -> None:
    assert analysis.main(["--spec", str(SPEC), "--campaign", CAMPAIGN.name, *args]) == 0


def test_two_runs_and_a_backfill_of_one_config_keep_both_runs_queryable(spark, s3, tmp_path):
    spec = StoreSpec.from_env()
    for config, capacity in ((SMALL, 1500.0), (BIG, 5000.0)):
        write_run(s3, tmp_path, config, "R1", capacity)
    analyse("--config", SMALL, "--config", BIG, "--run-id", "R1")
    for config, capacity in ((SMALL, 1200.0), (BIG, 5000.0)):
        write_run(s3, tmp_path, config, "R2", capacity, erlang="25.3")
    analyse("--config", SMALL, "--config", BIG, "--run-id", "R2", "--baseline-run", "R1")

    before = table_objects(s3)
    r1_board, r2_board = rows(spark, spec, "leaderboards", "R1"), rows(spark, spec, "leaderboards", "R2")
    # each run ranks its own measurements: the 1-node config carried ~1,500 msg/s in R1 and ~1,200 in R2
    assert r1_board[SMALL]["top_throughput_any_latency"] > 1.15 * r2_board[SMALL]["top_throughput_any_latency"]
    assert r1_board[SMALL]["run_id"] == "R1" and r2_board[SMALL]["run_id"] == "R2"
    # every table object of both runs lives in its run's partition
    assert all(layout.partition_value(key, "run") in ("R1", "R2") for key in before), sorted(before)

    # Backfill: config SMALL of run R1 again, with new raw records (a capacity of 1,000 msg/s now).
    write_run(s3, tmp_path / "again", SMALL, "R1", 1000.0)
    analyse("--config", SMALL, "--run-id", "R1")
    after = table_objects(s3)

    # every per-config table of SMALL's R1 (phase_summary and the series tables) is its backfilled partition
    backfilled = tuple(layout.table_prefix(t, CAMPAIGN.name, SMALL, "R1") for t in records.PER_CONFIG_TABLES)
    r1_campaign_wide = [layout.table_prefix(t, CAMPAIGN.name, run_id="R1") for t in records.CAMPAIGN_TABLES]
    replaced = {k for k in before if k.startswith(backfilled)}
    recomputed = {k for k in before if k.startswith(tuple(r1_campaign_wide))}
    assert replaced and not replaced & set(after)  # the backfilled partition's objects are new ones
    assert any(k.startswith(backfilled) for k in after)
    untouched = {k: e for k, e in before.items() if k not in replaced | recomputed}
    assert {k: after.get(k) for k in untouched} == untouched  # R2 whole, R1's other config: same keys, same ETags
    assert any(layout.partition_value(k, "run") == "R2" for k in untouched)
    assert any(k.startswith(layout.table_prefix("phase_summary", CAMPAIGN.name, BIG, "R1")) for k in untouched)

    # The backfilled config's rows carry the new figures, once each; the other config's campaign-wide row of the
    # recomputed run keeps its values; the other run is as it was.
    summary = read_table(spark, spec, "phase_summary", CAMPAIGN.name, SMALL, "R1").collect()
    assert len({(r["scenario"], r["repeat"], r["phase"], r["group"]) for r in summary}) == len(summary)
    board = rows(spark, spec, "leaderboards", "R1")
    assert board[SMALL]["top_throughput_any_latency"] < 0.8 * r1_board[SMALL]["top_throughput_any_latency"]
    assert board[BIG] == r1_board[BIG]
    assert rows(spark, spec, "leaderboards", "R2") == r2_board

    # `runs`: both runs, each with what its manifests recorded; R2 names its baseline; a re-analysis without
    # --baseline-run keeps the baseline a row names.
    runs = {r["run_id"]: r for r in stored_run_records(spec.open(), CAMPAIGN.name)}
    assert sorted(runs) == ["R1", "R2"]
    assert runs["R1"]["erlang_version"] == "25.2.3" and runs["R2"]["erlang_version"] == "25.3"
    assert runs["R2"]["baseline_run"] == "R1" and runs["R1"]["baseline_run"] is None
    for record in runs.values():
        assert record["status"] == "complete"  # every config x scenario x repeat of the spec, recorded complete
        assert (record["rabbitmq_version"], record["pika_version"], record["code_commit"]) == ("3.10.8", "1.3.2",
                                                                                            "abc123")
        assert record["spec_hash"] == CAMPAIGN.spec_hash and record["spark_version"] == spark.version
        assert record["configs"] == f"{SMALL}, {BIG}" and record["load_runs"] == record["load_runs_complete"] == 4
    assert runs["R1"]["started_at"] == STARTED["R1"] and runs["R1"]["ended_at"] == STARTED["R1"] + 600
    outcome = gate.validate_batch(spec, "leaderboards", CAMPAIGN, gate.CAMPAIGN_WIDE, "R2", None)
    assert "runs" in outcome.results and not [f for f in outcome.failures if f.startswith("runs:")], outcome.failures

    # Both runs answer a query (`sizing query`: every run's rows, or one run's with --run-id) ...
    sql = "SELECT run_id, config_id, top_matched_throughput FROM leaderboards ORDER BY run_id, config_id"
    query.register_views(spark, spec, CAMPAIGN.name, query.views_named(sql))
    lines = query.render(spark.sql(sql), 10).splitlines()
    assert [line.split()[:2] for line in lines[1:5]] == [["R1", SMALL], ["R1", BIG], ["R2", SMALL], ["R2", BIG]]
    query.register_views(spark, spec, CAMPAIGN.name, query.views_named(sql), run_id="R2")
    assert {line.split()[0] for line in query.render(spark.sql(sql), 10).splitlines()[1:-1]} == {"R2"}
    # ... and compare: R2's top throughput of SMALL is lower (1 repeat a side: inconclusive, never a guess)
    store = spec.open()
    comparison = compare_runs(CAMPAIGN, run_tables(store, RunRef(CAMPAIGN.name, "R1")),
                              run_tables(store, RunRef(CAMPAIGN.name, "R2")))
    top = next(c for c in comparison.changes if c.config_id == SMALL and c.metric == "top_throughput")
    assert top.change > 0 and top.verdict == "inconclusive" and top.n_base == top.n_head == 1
