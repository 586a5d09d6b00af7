"""The raw gate's row rules, checked into one row per worker phase (gate.client_checks, in the read that folds the
client rows) and per node phase (gate.node_checks): each rule, broken once, fails its own expectation and no
other; however the rows fall into the fold's batches, the verdicts are the same. Known answers: the corruptions
written here (one per run id), and a clean run beside them. No Spark session: the fold's function and the GX
suites run in this process."""

from __future__ import annotations

import pyarrow as pa
import pytest

from adapters.objectstore import StoreSpec
from sizing.campaign import DEPLOYMENTS
from sizing.contract import records
from sizing.contract.layout import RunKey
from spark_jobs.lib import gate, validation
from spark_jobs.lib.s3source import align_to_schema, ddl_to_arrow, fold_input_schema, read_arrow, read_for_fold
from tests.spark_records import client_rows, node_rows, phase_row, rows_as_read, table

WARMUP = 2  # seconds of each 10-second phase


def run_rows(run_id: str) -> tuple[list[dict], list[dict], list[dict]]:
    """phases, client_seconds and node_seconds of a clean two-phase, two-worker, two-node run."""
    key = RunKey("c", "n1-c5.2xlarge-gp2", "steps", run_id)
    phases, rows, nodes = [], [], []
    for phase in (1, 2):
        start = (phase - 1) * 10
        phases.append(phase_row(key, phase, start, 10, WARMUP, 100))
        for worker in (0, 1):
            rows += client_rows(key, phase, worker, range(start, start + 10), start + WARMUP, target_rate=100,
                                per_second=50)
        for node in ("rabbit-1", "rabbit-2"):
            nodes += node_rows(key, phase, node, range(start, start + 10), cpu_busy=0.5, missing=range(14, 15))
    return phases, rows, nodes


def corrupted_node(run_id: str, nodes: list[dict]) -> list[dict]:
    """The run's node rows with the one corruption its id names (second 15 of rabbit-2, unless it needs another)."""
    row = next(r for r in nodes if r["node"] == "rabbit-2" and r["second"] == 15)
    if run_id == "NODE_NULL":
        row["shared_cores"] = None
    elif run_id == "NODE_NEGATIVE":
        row["span_s"] = -0.5
    elif run_id == "NODE_TARGET":
        row["target"] = "mars"
    elif run_id == "NODE_ACROSS":  # a second of phase 1 again under phase 2: two check rows share it
        row["second"] = 3
    elif run_id == "NODE_FIGURES":  # a missing second that has figures
        row["missing"] = True
    return nodes


def corrupted(run_id: str, rows: list[dict]) -> list[dict]:
    """The run's rows with the one corruption its id names (phase 2 of worker 1, unless the corruption needs
    another row)."""
    at = next(i for i, r in enumerate(rows) if r["phase"] == 2 and r["worker"] == 1 and r["second"] == 15)
    row = rows[at]
    if run_id == "NULL":
        row["target_rate"] = None
    elif run_id == "NEGATIVE":
        row["in_flight"] = -1
    elif run_id == "PHASE":
        row["phase"] = -1
    elif run_id == "HISTOGRAM":
        row["e2e_hist"] += b"\x01"
    elif run_id == "TWICE":  # the same second twice in one object
        rows.append(dict(row))
    elif run_id == "ACROSS":  # a second of phase 1 again in phase 2's object (warm-up there): two check rows share it
        row["second"], row["warmup"] = 3, True
    elif run_id == "WARMUP":  # a steady second flagged as warm-up
        row["warmup"] = True
    elif run_id == "CONSUMED":
        row["consumed"] = 10_000
    return rows


# run id -> the expectation (suite: type(column)) it must fail, and nothing else
BROKEN = {
    "NULL": "raw_client_seconds: expect_column_values_to_be_between(column='target_rate_nulls')",
    "NEGATIVE": "raw_client_seconds: expect_column_values_to_be_between(column='in_flight_min')",
    "PHASE": "raw_client_seconds: expect_column_values_to_be_between(column='phase')",
    "HISTOGRAM": "raw_client_seconds: expect_column_values_to_be_between(column='bad_histogram_rows')",
    "TWICE": "raw_client_seconds: expect_column_values_to_be_between(column='duplicate_seconds')",
    "ACROSS": "raw_client_seconds: expect_column_values_to_be_between(column='duplicate_seconds')",
    "WARMUP": "raw_run_phase: expect_column_values_to_be_between(column='warmup_flag_errors')",
    "CONSUMED": ("raw_run_phase: expect_column_pair_values_a_to_be_greater_than_b("
                 "column_A='run_published_redelivered_foreign', column_B='run_consumed')"),
    "NODE_NULL": "raw_node_seconds: expect_column_values_to_be_between(column='shared_cores_nulls')",
    "NODE_NEGATIVE": "raw_node_seconds: expect_column_values_to_be_between(column='span_s_min')",
    "NODE_TARGET": ("raw_node_seconds: expect_column_values_to_be_in_set(column='target', "
                    f"value_set={list(DEPLOYMENTS)})"),
    "NODE_ACROSS": "raw_node_seconds: expect_column_values_to_be_between(column='duplicate_seconds')",
    "NODE_FIGURES": "raw_node_seconds: expect_column_values_to_be_between(column='missing_with_figures')",
}


def raw_of(run_ids: list[str]) -> dict:
    phases, rows, nodes = [], [], []
    for run_id in run_ids:
        run_phases, run_client, run_nodes = run_rows(run_id)
        phases += run_phases
        rows += corrupted(run_id, run_client)
        nodes += corrupted_node(run_id, run_nodes)
    return {"phases": rows_as_read("phases", phases), "client_seconds": rows_as_read("client_seconds", rows),
            "accounting": rows_as_read("accounting", []), "node_seconds": rows_as_read("node_seconds", nodes)}


def without_accounting(frames: dict) -> dict:
    """The frames without the accounting rule (no accounting rows are written here: every run would fail it)."""
    frames["raw_run_phase"]["in_accounting"] = True
    return frames


@pytest.mark.parametrize("run_id", sorted(BROKEN))
def test_each_client_rule_broken_once_fails_its_own_expectation(run_id: str) -> None:
    frames = without_accounting(gate.raw_frames(raw_of(["CLEAN", run_id]), {"steps": 2}))
    failures = validation.validate_frames(frames).failures
    assert [f.replace('"', "'") for f in failures] == [BROKEN[run_id]]


def test_a_clean_run_checks_into_one_row_per_worker_phase_and_passes() -> None:
    frames = without_accounting(gate.raw_frames(raw_of(["CLEAN"]), {"steps": 2}))
    assert validation.validate_frames(frames).failures == []
    checks = frames["raw_client_seconds"]
    assert sorted(checks[["phase", "worker"]].itertuples(index=False, name=None)) == [(1, 0), (1, 1), (2, 0), (2, 1)]
    assert (checks["rows"] == 10).all() and (checks["published_min"] == 50).all()
    assert (checks[[c for c in checks.columns if c.endswith("_nulls")]] == 0).all().all()
    assert (checks["bad_histogram_rows"] == 0).all() and (checks["duplicate_seconds"] == 0).all()
    nodes = frames["raw_node_seconds"]
    assert sorted(nodes[["phase", "node"]].itertuples(index=False, name=None)) == [
        (1, "rabbit-1"), (1, "rabbit-2"), (2, "rabbit-1"), (2, "rabbit-2")]
    # second 14 is missing (no figures): a null cpu_busy, never a least value of it
    assert nodes.set_index(["phase", "node"])["rows"].to_dict() == dict.fromkeys(
        [(1, "rabbit-1"), (1, "rabbit-2"), (2, "rabbit-1"), (2, "rabbit-2")], 10)
    assert (nodes["cpu_busy_min"] == 0.5).all() and (nodes["missing_with_figures"] == 0).all()


@pytest.mark.parametrize("split", [1, 7, 23, 40])
def test_the_verdicts_do_not_depend_on_how_the_rows_fall_into_batches(split: int) -> None:
    """The checks see tables of whatever size the fold gathered: a worker phase split over two tables is two
    check rows, and the second held twice is still counted once (row 40, the copy, is in the second batch; the
    original, row 35, is in the first only when split at 40: then the sweep across check rows finds it)."""
    _, rows, _ = run_rows("TWICE")
    rows = corrupted("TWICE", rows)
    schema = records.arrow_schema("client_seconds")
    table = align_to_schema(pa.Table.from_pylist(rows, schema=schema), schema).combine_chunks()
    batches = [table.slice(0, split).to_batches()[0], table.slice(split).to_batches()[0]]
    checks = pa.concat_tables([gate.client_checks(pa.Table.from_batches([b])) for b in batches]).to_pandas()
    assert checks["rows"].sum() == len(rows) == 41 and len(checks) > 4  # some worker phase in both batches
    frame = gate.raw_frames({"client_seconds": checks, "phases": rows_as_read("phases", []),
                             "accounting": rows_as_read("accounting", []),
                             "node_seconds": rows_as_read("node_seconds", [])}, {})["raw_client_seconds"]
    assert frame.groupby("worker")["duplicate_seconds"].max().to_dict() == {0: 0, 1: 1}


def test_the_driver_hands_the_fold_what_the_data_source_hands_it(tmp_path) -> None:
    """The raw gate reads in the driver (s3source.read_arrow), the analysis through the data source
    (read_for_fold): the fold sees the same types either way (strings dictionary-encoded) and, over two objects
    written alike and a third missing a column, the same rows. Known answer: the rows written, object by object."""
    store = StoreSpec("file", "b", root=str(tmp_path)).open()
    schema = records.arrow_schema("client_seconds")
    _, rows, _ = run_rows("CLEAN")
    keys = [f"raw/o{i}.parquet" for i in range(3)]
    parts = [rows[:15], rows[15:30], rows[30:]]
    for key, part in zip(keys, parts, strict=True):
        table = pa.Table.from_pylist(part, schema=schema)
        store.put_parquet(key, table.drop_columns(["target_rate"]) if key.endswith("2.parquet") else table)
    seen = []

    def fold(batches):
        for batch in batches:
            seen.append(batch.schema)
            yield batch

    driver = read_arrow(StoreSpec("file", "b", root=str(tmp_path)), keys, schema, fold)
    source = pa.concat_tables([read_for_fold(store, key, schema) for key in keys])
    wanted = [(f.name, f.type) for f in fold_input_schema(schema)]
    assert seen and all([(f.name, f.type) for f in s] == wanted for s in seen)
    assert pa.types.is_dictionary(fold_input_schema(schema).field("campaign").type)
    assert driver.num_rows == len(rows) == source.num_rows
    key = ["run_id", "phase", "worker", "second"]
    assert driver.to_pandas().sort_values(key).reset_index(drop=True).equals(
        source.to_pandas().sort_values(key).reset_index(drop=True))
    assert driver.to_pandas()["target_rate"].isna().sum() == len(parts[2])


def test_deliveries_of_another_runs_backlog_are_not_taken_for_extra_consumption() -> None:
    """Known answers (issue 32, seed 001's scale run: a phase's purged lazy queues delivered 200 messages of the
    phase before into the next, and the gate refused the batch): `foreign` deliveries are counted in consumed and
    allowed for, once each; one more delivery than published + redelivered + foreign still fails; records written
    before the column (foreign null) are checked as before."""
    def with_extra(run_id: str, extra: int, foreign: int | None) -> list[dict]:
        rows = run_rows(run_id)[1]
        for row in rows:
            row["foreign"] = 0 if foreign is not None else None
        row = next(r for r in rows if r["phase"] == 2 and r["worker"] == 1 and r["second"] == 15)
        row["consumed"] += extra
        row["foreign"] = foreign
        return rows

    def failures(rows: list[dict], run_id: str) -> list[str]:
        phases, _, nodes = run_rows(run_id)
        raw = {"phases": rows_as_read("phases", phases), "client_seconds": rows_as_read("client_seconds", rows),
               "accounting": rows_as_read("accounting", []), "node_seconds": rows_as_read("node_seconds", nodes)}
        frames = without_accounting(gate.raw_frames(raw, {"steps": 2}))
        return [f.replace('"', "'") for f in validation.validate_frames(frames).failures]

    assert failures(with_extra("FOREIGN", 200, 200), "FOREIGN") == []
    assert failures(with_extra("FOREIGN", 201, 200), "FOREIGN") == [BROKEN["CONSUMED"]]
    assert failures(with_extra("OLD", 0, None), "OLD") == []
    assert failures(with_extra("OLD", 1, None), "OLD") == [BROKEN["CONSUMED"]]


# node_series (node_seconds' own values, projected by the analysis) is validated as one check row per run, node and
# target (gate.node_series_checks): the projection's own breakages, each once, fail their own expectation.
NODE_SERIES_BROKEN = {
    "NODE_ACROSS": "node_series: expect_column_values_to_be_between(column='duplicate_seconds')",
    "NODE_TARGET": f"node_series: expect_column_values_to_be_in_set(column='target', value_set={list(DEPLOYMENTS)})",
}


def node_series_of(run_ids: list[str]) -> pa.Table:
    nodes = [row for run_id in run_ids for row in corrupted_node(run_id, run_rows(run_id)[2])]
    schema = ddl_to_arrow(records.table_ddl("node_series"))
    return table("node_seconds", nodes).select(gate.NODE_SERIES_CHECK_READS).cast(
        pa.schema([schema.field(c) for c in gate.NODE_SERIES_CHECK_READS]))


def test_node_series_checks_into_one_row_per_run_node_and_target_and_a_clean_run_passes() -> None:
    checks = gate.node_series_checks(node_series_of(["CLEAN", "NODE_ACROSS"]))
    assert list(checks.columns) == validation.node_series_check_columns()
    # known answer: 2 runs x 2 nodes, 20 seconds each; NODE_ACROSS wrote rabbit-2's second 15 as second 3 again
    by = checks.set_index(["run_id", "node"])
    assert by["rows"].to_dict() == dict.fromkeys(by.index, 20)
    assert by["duplicate_seconds"].to_dict() == {("CLEAN", "rabbit-1"): 0, ("CLEAN", "rabbit-2"): 0,
                                                 ("NODE_ACROSS", "rabbit-1"): 0, ("NODE_ACROSS", "rabbit-2"): 1}
    assert validation.validate_frames({"node_series": gate.node_series_checks(node_series_of(["CLEAN"]))}).success


@pytest.mark.parametrize("run_id", sorted(NODE_SERIES_BROKEN))
def test_each_node_series_rule_broken_once_fails_its_own_expectation(run_id: str) -> None:
    outcome = validation.validate_frames({"node_series": gate.node_series_checks(node_series_of(["CLEAN", run_id]))})
    assert outcome.failures == [NODE_SERIES_BROKEN[run_id]]


def test_a_null_node_second_is_counted_not_grouped_away() -> None:
    rows = node_series_of(["CLEAN"])
    seconds = rows.column("second").to_pylist()
    seconds[0] = None
    rows = rows.set_column(rows.schema.get_field_index("second"), "second", pa.array(seconds, pa.int32()))
    checks = gate.node_series_checks(rows)
    assert checks["second_nulls"].sum() == 1 and checks["rows"].sum() == 40
    assert validation.validate_frames({"node_series": checks}).failures == [
        "node_series: expect_column_values_to_be_between(column='second_nulls')"]
