"""End to end against the S3-compatible server: raw records -> phase_summary -> leaderboards -> GX."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from adapters.objectstore import StoreSpec
from sizing.campaign import load_campaign
from sizing.contract import layout, raw_layout, records
from sizing.contract.histogram import merge_wire, quantile_from_counts
from sizing.contract.layout import RunKey
from spark_jobs.jobs import analysis, query, validate
from spark_jobs.lib import gate, history, leaderboards, phase_summary
from spark_jobs.lib.tableio import read_table
from spark_jobs.tools.synthetic import PhasePlan, RunModel, run_objects
from tests.spark_records import write_with_loadgen_recorder

pytestmark = pytest.mark.spark

SPEC = Path(__file__).resolve().parent / "fixtures" / "report-sample.yaml"  # local-quick with 500/1000/2000 steps
CAMPAIGN = load_campaign(SPEC)
SMALL, BIG = "n1-c5.2xlarge-gp2", "n3-c5.2xlarge-gp2"


def write_run(s3, out_dir, config: str, scenario: str, run_id: str, capacity: float) -> None:
    """A synthetic run written by the load generator's recorder (loadgen.recorder.RecordStore)."""
    timeline = [p for s in CAMPAIGN.scenarios if s.name == scenario for p in s.step_rates or ()]
    sc = CAMPAIGN.scenario(scenario)
    faults = {1: 9.0} if sc.faults else {}
    model = RunModel(RunKey(CAMPAIGN.name, config, scenario, run_id),
                     tuple(PhasePlan(rate, int(sc.step_duration_s), int(sc.warmup_s)) for rate in timeline),
                     workers=2, capacity=capacity, fault_at=faults, fault_outage_s=3, seed=len(config))
    write_with_loadgen_recorder(run_objects(model), model.key, out_dir / run_id, s3)


def raw_frame(store, config: str, record_type: str) -> pd.DataFrame:
    keys = [k for k in store.list(raw_layout.raw_config_prefix(CAMPAIGN.name, config))
            if raw_layout.record_type_of(k) == record_type]
    return pd.concat([store.read_parquet(k).to_pandas() for k in keys], ignore_index=True)


def check_series_against_raw(spark, spec, store) -> None:
    """Issue 35: the series tables the analysis wrote beside phase_summary, in the same per-config partitions.
    Independent counter: the raw objects read back from the store with pyarrow, summed, maxed and their histograms
    merged per second here (sizing.contract.histogram), not through the fold."""
    for config in (SMALL, BIG):
        for table in records.BESIDE_SUMMARY:
            assert store.list(layout.table_prefix(table, CAMPAIGN.name, config, "R1")), (table, config)
    client = read_table(spark, spec, "client_series", CAMPAIGN.name, SMALL).toPandas()
    raw = raw_frame(store, SMALL, "client_seconds").assign(group=lambda f: f["group"].fillna("main"))
    key = ["scenario", "repeat", "group", "second"]
    want = raw.groupby(key).agg(published=("published", "sum"), confirmed=("confirmed", "sum"),
                                consumed=("consumed", "sum"), workers=("worker", "size"),
                                offered_rate=("target_rate", "max"), e2e_max_us=("e2e_max_us", "max"))
    got = client.set_index(key).sort_index()
    assert len(got) == len(want) > 50  # 2 scenarios x 1 repeat x 1 group x their seconds
    for column in ("published", "confirmed", "consumed", "workers", "offered_rate"):
        assert got[column].tolist() == want[column].tolist(), column
    assert np.allclose(got["e2e_max_ms"], want["e2e_max_us"] / 1000, equal_nan=True)
    for (scenario, repeat, group, second), part in list(raw.groupby(key))[::25]:
        counts = merge_wire(part["e2e_hist"])
        row = got.loc[(scenario, repeat, group, second)]
        assert row["e2e_p99_ms"] == pytest.approx(quantile_from_counts(counts, 0.99) / 1000, nan_ok=True)
    broker = read_table(spark, spec, "broker_series", CAMPAIGN.name, SMALL).toPandas()
    samples = raw_frame(store, SMALL, "broker_samples")
    last = samples.sort_values("ts").groupby(["scenario", "node", samples["second"].floordiv(1)]).last()
    assert len(broker) == len(last) > 0
    by_second = broker.set_index(["scenario", "node", "second"]).sort_index()
    assert by_second["queue_messages"].tolist() == last["queue_messages"].tolist()
    nodes = read_table(spark, spec, "node_series", CAMPAIGN.name, SMALL).toPandas()
    raw_nodes = raw_frame(store, SMALL, "node_seconds")
    assert len(nodes) == len(raw_nodes) > 0
    assert np.isclose(nodes["cpu_busy"].sum(), raw_nodes["cpu_busy"].sum())
    assert "e2e_hist" not in client.columns  # no histogram leaves the analysis
    events = read_table(spark, spec, "run_events", CAMPAIGN.name, SMALL).toPandas()
    raw_events = raw_frame(store, SMALL, "events")
    key = ["scenario", "repeat", "ts", "kind"]
    assert len(raw_events) > 0 and (events.sort_values(key)[key].to_numpy().tolist()
                                    == raw_events.sort_values(key)[key].to_numpy().tolist())


@pytest.mark.slow
def test_raw_to_tables_validated_idempotent_and_corruption_fails(spark, s3, tmp_path):
    spec = StoreSpec.from_env()
    assert spec.kind == "s3" and spec.endpoint_url
    store = spec.open()
    for config, capacity in ((SMALL, 1500.0), (BIG, 5000.0)):
        for scenario in ("increasing-intensity", "broker-kill"):
            write_run(s3, tmp_path, config, scenario, "R1", capacity)

    rules = phase_summary.Rules(slo_p99_ms=CAMPAIGN.target.p99_latency_ms)
    phase_summary.run(spark, spec, CAMPAIGN.name, [SMALL, BIG], ["R1"], rules)
    history.write_runs(spark, spec, CAMPAIGN, ["R1"])  # the runs row, as the analysis job writes it per run
    tables = leaderboards.run(spark, spec, CAMPAIGN, "R1")

    summary = read_table(spark, spec, "phase_summary", CAMPAIGN.name)
    rows = {(r["config_id"], r["scenario"], r["phase"]): r for r in summary.collect()}
    check_series_against_raw(spark, spec, store)
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
        # Data Docs for the first batch only: one site shows they are built; each rebuild of the site costs seconds
        outcome = gate.validate_batch(spec, batch, CAMPAIGN, config, "R1",
                                      str(docs) if (batch, config) == ("raw", SMALL) else None)
        assert outcome.success, outcome.message()
        result = json.loads(store.get(layout.validation_key(batch, CAMPAIGN.name, config, "R1")))
        assert result["success"] is True and result["results"]
    assert list(docs.rglob("index.html")), "Data Docs were not built"

    # Re-running one config replaces exactly its partition: same rows, no duplicates, other config untouched.
    big_objects = store.list(layout.table_prefix("phase_summary", CAMPAIGN.name, BIG))
    phase_summary.run(spark, spec, CAMPAIGN.name, [SMALL], ["R1"], rules)
    again = read_table(spark, spec, "phase_summary", CAMPAIGN.name)
    assert again.count() == len(rows)
    assert again.select("config_id", "scenario", "run_id", "phase").distinct().count() == len(rows)
    assert store.list(layout.table_prefix("phase_summary", CAMPAIGN.name, BIG)) == big_objects

    # A corrupted batch: a worker that consumed more than was ever published, and a phase with no records.
    key = RunKey(CAMPAIGN.name, BIG, "increasing-intensity", "BAD")
    write_run(s3, tmp_path, BIG, "increasing-intensity", "BAD", 5000.0)
    part = raw_layout.raw_part_key(key, "client_seconds", 1, 0)
    table = store.read_parquet(part)
    table = table.set_column(table.schema.get_field_index("consumed"), "consumed",
                             __import__("pyarrow").compute.multiply(table.column("consumed"), 50))
    store.put_parquet(part, table)
    for worker in (0, 1):
        store.delete([raw_layout.raw_part_key(key, "client_seconds", 3, worker)])
    outcome = gate.validate_batch(spec, "raw", CAMPAIGN, BIG, "BAD", None)
    assert not outcome.success
    text = outcome.message()
    assert "expect_column_pair_values_a_to_be_greater_than_b" in text and "run_consumed" in text
    assert "in_client_seconds" in text
    assert json.loads(store.get(layout.validation_key("raw", CAMPAIGN.name, BIG, "BAD")))["success"] is False
    # The CLI (what spark-submit runs) exits 1 on the same batch.
    assert validate.main(["--batch", "raw", "--spec", str(SPEC), "--campaign", CAMPAIGN.name, "--config", BIG,
                          "--run-id", "BAD", "--docs-dir", str(tmp_path / "docs2")]) == 1
    # The analysis job gates on the raw suite: the same batch stops it before it writes a row.
    before = store.list(layout.table_prefix("phase_summary", CAMPAIGN.name, BIG))
    with pytest.raises(gate.ValidationFailed, match="run_consumed"):
        analysis.main(["--spec", str(SPEC), "--campaign", CAMPAIGN.name, "--config", BIG, "--run-id", "BAD",
                       "--validate"])
    assert store.list(layout.table_prefix("phase_summary", CAMPAIGN.name, BIG)) == before

    # `sizing query`: the campaign's tables and raw records as Spark SQL views.
    sql = "SELECT config_id, rank_at_top FROM leaderboards ORDER BY rank_at_top"
    assert query.views_named(sql) == ["leaderboards"]
    query.register_views(spark, spec, CAMPAIGN.name, query.views_named(sql))
    lines = query.render(spark.sql(sql), 10).splitlines()
    assert lines[0].split() == ["config_id", "rank_at_top"] and lines[1].split() == [SMALL, "1"]
    raw_sql = "SELECT count(*) AS n FROM phases WHERE run_id = 'R1'"
    query.register_views(spark, spec, CAMPAIGN.name, query.views_named(raw_sql))
    assert query.render(spark.sql(raw_sql), 10).splitlines()[1].split() == ["8"]
