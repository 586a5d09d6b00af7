"""Known-answer tests of the tables beside phase_summary, each through its own module's Spark transform on
hand-built raw records: broker_series (each node's last sample per whole second), run_events (the events in the
table's columns and types) and client_series (the client fold's blocks, run by run). Known answers: the hand-built
rows themselves."""

from __future__ import annotations

import pytest

from sizing.contract import records
from sizing.contract.layout import RunKey
from spark_jobs.lib.phase_summary import broker_series, client_series, run_events
from spark_jobs.lib.phase_summary.client_fold import ClientRecords
from tests.spark_records import client_rows, frames

pytestmark = pytest.mark.spark

KEY = RunKey("c", "n3-c5.2xlarge-gp2", "increasing-intensity", "R1")


def sample(node: str, second: float, queue: int, mem_used: int, mem_limit: int | None) -> dict:
    return {**KEY.as_dict(), "ts": 1.6e9 + second, "second": second, "phase": 1, "node": node, "running": True,
            "mem_used_bytes": mem_used, "mem_limit_bytes": mem_limit, "mem_alarm": False, "disk_free_bytes": 10**9,
            "disk_alarm": False, "queue_messages": queue, "queue_messages_ready": queue, "queue_messages_unacked": 0}


def names_and_types(frame) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in frame.schema.fields]


def expected_types(table: str) -> list[tuple[str, str]]:
    return [(c.name, records.SPARK_TYPES[c.type].lower()) for c in records.TABLES[table]]


def test_broker_series_keeps_each_nodes_last_sample_of_each_whole_second(spark):
    rows = [sample("a", 3.7, 20, 200, 400), sample("a", 3.2, 10, 100, 400), sample("a", 4.1, 30, 300, 400),
            sample("b", 3.5, 5, 50, None)]
    got_frame = broker_series.broker_series(frames(spark, "broker_samples", rows))
    assert names_and_types(got_frame) == expected_types("broker_series")
    got = {(r["node"], r["second"]): r for r in (row.asDict() for row in got_frame.collect())}
    assert sorted(got) == [("a", 3), ("a", 4), ("b", 3)]
    assert got[("a", 3)]["samples"] == 2 and got[("a", 3)]["queue_messages"] == 20  # the later sample, by ts
    assert got[("a", 3)]["mem_share"] == 0.5 and got[("a", 4)]["samples"] == 1
    assert got[("b", 3)]["mem_share"] is None  # no limit reported: no share, not an error
    assert {r["run_id"] for r in got.values()} == {"R1"}


def test_run_events_are_the_raw_events_in_the_tables_columns_and_types(spark):
    rows = [{**KEY.as_dict(), "ts": 1.6e9 + 12.5, "second": 12.5, "phase": 2, "kind": "fault_start",
             "fault_id": "f1", "fault_kind": "kill_node", "node": "rabbit-2", "detail": '{"signal": "KILL"}'},
            {**KEY.as_dict(), "ts": 1.6e9 + 1.0, "second": 1.0, "phase": 1, "kind": "phase_start",
             "fault_id": None, "fault_kind": None, "node": None, "detail": None}]
    got_frame = run_events.run_events(frames(spark, "events", rows))
    assert names_and_types(got_frame) == expected_types("run_events")
    got = sorted((row.asDict() for row in got_frame.collect()), key=lambda r: r["second"])
    assert [(r["kind"], r["phase"], r["second"], r["node"]) for r in got] == [
        ("phase_start", 1, 1.0, None), ("fault_start", 2, 12.5, "rabbit-2")]
    assert got[1]["detail"] == '{"signal": "KILL"}' and got[1]["fault_kind"] == "kill_node"


def test_client_series_sums_each_second_over_workers_warm_up_included(spark):
    rows = [*client_rows(KEY, 1, 0, range(6), 2, target_rate=300, per_second=100),
            *client_rows(KEY, 1, 1, range(6), 2, target_rate=300, per_second=50)]
    blocks = ClientRecords.of(frames(spark, "client_seconds", rows)).series
    got_frame = client_series.client_series(blocks)
    assert names_and_types(got_frame) == expected_types("client_series")
    got = sorted((row.asDict() for row in got_frame.collect()), key=lambda r: r["second"])
    assert [r["second"] for r in got] == list(range(6))
    assert [r["warmup"] for r in got] == [True, True, False, False, False, False]
    assert all(r["workers"] == 2 and r["published"] == 150 and r["confirmed"] == 150 for r in got)
    assert all(r["offered_rate"] == 300 and r["group"] == records.DEFAULT_GROUP for r in got)
    assert all(r["e2e_samples"] == 150 and 4.9 <= r["e2e_p99_ms"] <= 5.1 for r in got)  # 5 ms, 1 % error
