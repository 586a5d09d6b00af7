"""loadgen.nodes.NodeSecondsTracker: which second each row describes, and which seconds are missing.

Snapshots are built by hand with a known counter (1 CPU second per second), so every row's figure is known.
"""

from __future__ import annotations

from adapters.nodestats import Snapshot
from loadgen.nodes import NodeSecondsTracker
from sizing.contract import records


def snap(t: float, identity: str = "1:1") -> Snapshot:
    return Snapshot(t=t, identity=identity, cores=2, shared_cores=True, counters={"cpu_user_s": t, "cpu_system_s": 0.0})


def test_one_row_per_second_stamped_at_the_first_response_of_its_span():
    tracker = NodeSecondsTracker("n1", "local")
    rows = [r for t in (0.02, 1.03, 2.01, 3.05) for r in tracker.observe(snap(t))]
    assert [r["second"] for r in rows] == [0, 1, 2]
    assert [r["ts_offset"] for r in rows] == [0.02, 1.03, 2.01]
    assert all(not r["missing"] and abs(r["cpu_busy"] - 0.5) < 1e-9 for r in rows)  # 1 CPU-s/s of 2 cores
    assert set(rows[0]) - {"ts_offset"} <= set(records.column_names("node_seconds"))


def test_a_response_that_outlives_its_interval_makes_its_seconds_missing_not_averaged():
    tracker = NodeSecondsTracker("n1", "local")
    rows = [r for t in (9.01, 10.01, 14.02, 15.01, 16.0) for r in tracker.observe(snap(t))]
    by_second = {r["second"]: r for r in rows}
    assert not by_second[9]["missing"]
    # the 10.01 -> 14.02 pair spans 4 s: no second of it gets figures
    assert [s for s, r in sorted(by_second.items()) if r["missing"]][-4:] == [10, 11, 12, 13]
    assert by_second[12]["cpu_busy"] is None
    assert not by_second[14]["missing"] and not by_second[15]["missing"]
    assert sorted(by_second) == list(range(0, 16))  # every second exactly once


def test_a_failed_read_and_a_restarted_process_give_missing_seconds_then_rows_again():
    tracker = NodeSecondsTracker("n1", "local")
    rows = tracker.observe(snap(0.01)) + tracker.observe(snap(1.01))
    rows += tracker.fail(2.2)  # killed: connection refused at 2.2
    rows += tracker.fail(3.1)
    rows += tracker.observe(snap(4.05, identity="2:9")) + tracker.observe(snap(5.02, identity="2:9"))
    rows += tracker.finish(6.0)
    assert [(r["second"], r["missing"]) for r in rows] == [
        (0, False), (1, True), (2, True), (3, True), (4, False), (5, True)]
