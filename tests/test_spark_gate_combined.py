"""The GX gates as the analysis job runs them: every config's batch of a kind in one read and one GX run
(gate.validate_batches). Each gate still fails on the bad batch it was written for, and the result filed for each
config names that config's failures only. Known answers: the corruptions written here, and which config got them."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from adapters.objectstore import StoreSpec
from sizing.campaign import load_campaign
from sizing.contract import layout, raw_layout
from sizing.contract.layout import RunKey
from spark_jobs.lib import gate, leaderboards, phase_summary
from spark_jobs.tools.synthetic import PhasePlan, RunModel, run_objects, write_objects

pytestmark = pytest.mark.spark

SPEC = Path(__file__).resolve().parent / "fixtures" / "report-sample.yaml"  # local-quick with 500/1000/2000 steps
CAMPAIGN = load_campaign(SPEC)
SMALL, BIG = "n1-c5.2xlarge-gp2", "n3-c5.2xlarge-gp2"
SCENARIO = "increasing-intensity"


def write_run(store, config: str, run_id: str, capacity: float) -> RunKey:
    sc = CAMPAIGN.scenario(SCENARIO)
    key = RunKey(CAMPAIGN.name, config, SCENARIO, run_id)
    model = RunModel(key, tuple(PhasePlan(rate, int(sc.step_duration_s), int(sc.warmup_s)) for rate in sc.step_rates),
                     workers=2, capacity=capacity, seed=len(config), nodes=CAMPAIGN.cluster(config).nodes)
    write_objects(store, run_objects(model))
    return key


def rewrite(store, key: str, column: str, change) -> None:
    table = store.read_parquet(key)
    index = table.schema.get_field_index(column)
    store.put_parquet(key, table.set_column(index, column, change(table.column(column))))


def documents(store, batch: str, run_id: str, configs: list[str]) -> dict[str, dict]:
    return {c: json.loads(store.get(layout.validation_key(batch, CAMPAIGN.name, c, run_id))) for c in configs}


def test_each_gate_fails_on_its_bad_batch_and_names_only_the_bad_config(spark, s3, tmp_path) -> None:
    spec = StoreSpec.from_env()
    store = spec.open()
    for config, capacity in ((SMALL, 1500.0), (BIG, 5000.0)):
        write_run(store, config, "R1", capacity)

    # A clean campaign passes in one GX run, and every config's document says so.
    good = gate.validate_batches(spec, "raw", CAMPAIGN, [SMALL, BIG], ["R1"], None)
    assert all(o.success for o in good.values()) and len({id(o) for o in good.values()}) == 1
    docs = documents(store, "raw", "R1", [SMALL, BIG])
    assert all(d["success"] and d["results"] and d["validated_with"] == [f"{SMALL}/R1", f"{BIG}/R1"]
               for d in docs.values())

    # raw: BIG's run consumed more than was ever published, lost a phase's client records, and a histogram that
    # is not whole buckets; SMALL is untouched.
    bad = write_run(store, BIG, "BAD", 5000.0)
    write_run(store, SMALL, "BAD", 1500.0)
    rewrite(store, raw_layout.raw_part_key(bad, "client_seconds", 1, 0), "consumed", lambda c: pc.multiply(c, 50))
    rewrite(store, raw_layout.raw_part_key(bad, "client_seconds", 2, 1), "e2e_hist",
            lambda c: pa.array([None if v is None else v + b"\x01" for v in c.to_pylist()], pa.binary()))
    store.delete([raw_layout.raw_part_key(bad, "client_seconds", 3, w) for w in (0, 1)])
    with pytest.raises(gate.ValidationFailed) as failed:
        gate.gate(spec, "raw", CAMPAIGN, [SMALL, BIG], ["BAD"], None)
    text = str(failed.value)
    assert "run_consumed" in text and "in_client_seconds" in text and "bad_histogram_rows" in text
    assert SMALL not in text
    docs = documents(store, "raw", "BAD", [SMALL, BIG])
    assert docs[SMALL]["success"] is True and docs[SMALL]["failures"] == []
    assert docs[SMALL]["validated_with"] == [f"{SMALL}/BAD"]  # validated on its own once the union failed
    assert docs[BIG]["success"] is False
    assert {f.split("(")[0] for f in docs[BIG]["failures"]} >= {
        "raw_run_phase: expect_column_pair_values_a_to_be_greater_than_b",
        "raw_run_phase: expect_column_values_to_be_in_set", "raw_client_seconds: expect_column_values_to_be_between"}

    # The analysis job's form: the raw gate on the check rows of phase_summary's own fold (the client rows read
    # once) stops the job before a row is written.
    with pytest.raises(gate.ValidationFailed, match="run_consumed") as failed:
        phase_summary.step(spark, spec, CAMPAIGN, [SMALL, BIG], ["BAD"], validate=True)
    assert "bad_histogram_rows" in str(failed.value) and SMALL not in str(failed.value)
    assert not [k for c in (SMALL, BIG) for k in store.list(layout.table_prefix("phase_summary", CAMPAIGN.name, c))]

    # raw: a config with no records at all cannot hide behind another config's rows.
    write_run(store, SMALL, "HALF", 1500.0)
    outcomes = gate.validate_batches(spec, "raw", CAMPAIGN, [SMALL, BIG], ["HALF"], None)
    assert outcomes[(SMALL, "HALF")].success and not outcomes[(BIG, "HALF")].success
    assert any("in_client_seconds" in f for f in outcomes[(BIG, "HALF")].failures)

    # phase_summary: both configs' partitions in one read; BIG's with a p99 below its p50.
    phase_summary.step(spark, spec, CAMPAIGN, [SMALL, BIG], ["R1"], validate=True, docs_dir=str(tmp_path / "docs"))
    assert list((tmp_path / "docs").rglob("index.html")), "Data Docs were not built"
    for batch in ("raw", "phase_summary"):
        assert all(d["success"] and d["validated_with"] == [f"{SMALL}/R1", f"{BIG}/R1"]
                   for d in documents(store, batch, "R1", [SMALL, BIG]).values())
    assert all(o.success for o in gate.validate_batches(spec, "phase_summary", CAMPAIGN, [SMALL, BIG],
                                                        ["R1"], None).values())
    (part,) = [k for k in store.list(layout.table_prefix("phase_summary", CAMPAIGN.name, BIG, "R1"))
               if k.endswith(".parquet")]
    rewrite(store, part, "e2e_p99_ms", lambda c: pc.multiply(c, 0.0))
    with pytest.raises(gate.ValidationFailed, match="e2e_p99_ms") as failed:
        gate.gate(spec, "phase_summary", CAMPAIGN, [SMALL, BIG], ["R1"], None)
    assert SMALL not in str(failed.value)
    docs = documents(store, "phase_summary", "R1", [SMALL, BIG])
    assert docs[SMALL]["success"] is True and docs[BIG]["success"] is False
    assert all("e2e_p99_ms" in f or "e2e_p999_ms" in f for f in docs[BIG]["failures"])

    # leaderboards (campaign-wide, one batch per run): a non-positive monthly cost fails it. (No `runs` row here:
    # its manifests are not written, and that expectation fails on both sides.)
    leaderboards.run(spark, spec, CAMPAIGN, "R1")
    before = gate.validate_batch(spec, "leaderboards", CAMPAIGN, gate.CAMPAIGN_WIDE, "R1", None)
    assert not [f for f in before.failures if "monthly_cost" in f], before.failures
    (board,) = [k for k in store.list(layout.table_prefix("leaderboards", CAMPAIGN.name, run_id="R1"))
                if k.endswith(".parquet")]
    rewrite(store, board, "monthly_cost", lambda c: pc.multiply(c, -1.0))
    with pytest.raises(gate.ValidationFailed, match=r"leaderboards: expect_column_values_to_be_between.*monthly_cost"):
        gate.gate(spec, "leaderboards", CAMPAIGN, [gate.CAMPAIGN_WIDE], ["R1"], None)
    assert documents(store, "leaderboards", "R1", [gate.CAMPAIGN_WIDE])[gate.CAMPAIGN_WIDE]["success"] is False
