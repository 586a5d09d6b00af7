"""phase_summary with workload groups (issue 14), on hand-built raw records and the session's Spark fixture.

Known answers: a foreground group (2 workers x 50 msg/s, 5 ms end-to-end) and a background group (1 worker x
10 msg/s, 40 ms) in the same two phases give one row per group per phase with each group's own rates and
latencies; cluster-wide figures (events) repeat on both rows; records without a group (written before groups)
are the implicit `main` foreground group.
"""

from __future__ import annotations

import numpy as np
import pytest

from sizing.contract.layout import RunKey
from spark_jobs.lib import gate
from spark_jobs.lib import phase_summary as ps
from tests.spark_records import client_rows, frames, phase_row, rows_as_read

pytestmark = pytest.mark.spark

KEY = RunKey("c", "n1-c5.2xlarge-gp2", "mixed", "R1")
OLD = RunKey("c", "n1-c5.2xlarge-gp2", "pure", "R1")


def two_group_records() -> tuple[list[dict], list[dict], list[dict]]:
    """phases, client_seconds and accounting rows of the two-group run and of the pre-groups run."""
    phases, rows, books = [], [], []
    for group, foreground, rate, workers, e2e_us in (("qq", True, 100, (0, 1), 5_000.0),
                                                     ("lazy", False, 10, (2,), 40_000.0)):
        for phase in (1, 2):
            start = (phase - 1) * 10
            phases.append({**phase_row(KEY, phase, start, 10, 2, rate), "group": group, "foreground": foreground,
                           "group_detail": '{"queue_type": "classic"}' if not foreground else None})
            books.append({**KEY.as_dict(), "phase": phase, "published": rate * 10, "confirmed": rate * 10,
                          "consumed_unique": rate * 10, "lost": 0 if foreground else 3, "duplicates": 0,
                          "redelivered": 0, "reordered": 0, "group": group})
            per_worker = rate // len(workers)
            for worker in workers:
                samples = [np.full(per_worker, e2e_us) for _ in range(10)]
                rows += [{**r, "group": group} for r in client_rows(
                    KEY, phase, worker, range(start, start + 10), start + 2, target_rate=rate,
                    per_second=per_worker, e2e_us=samples)]
    phases.append(phase_row(OLD, 1, 0, 10, 2, 100))  # written before groups: no group columns
    rows += client_rows(OLD, 1, 0, range(0, 10), 2, target_rate=100, per_second=100)
    return phases, rows, books


def test_one_row_per_group_per_phase_with_each_groups_own_figures(spark) -> None:
    phases, rows, books = two_group_records()
    events = [{**KEY.as_dict(), "ts": 1.6e9 + 15, "second": 15.0, "phase": 2, "kind": "worker_behind",
               "fault_id": None, "fault_kind": None, "node": None, "detail": None}]
    summary = ps.summarise(frames(spark, "phases", phases), ps.ClientRecords.of(frames(spark, "client_seconds", rows)),
                           frames(spark, "accounting", books), frames(spark, "events", events),
                           frames(spark, "broker_samples", []), ps.Rules(slo_p99_ms=1000.0))
    got = {(r["scenario"], r["group"], r["phase"]): r.asDict() for r in summary.collect()}
    assert sorted(got) == [("mixed", "lazy", 1), ("mixed", "lazy", 2), ("mixed", "qq", 1), ("mixed", "qq", 2),
                           ("pure", "main", 1)]
    for phase in (1, 2):
        qq, lazy = got[("mixed", "qq", phase)], got[("mixed", "lazy", phase)]
        assert qq["publish_rate"] == pytest.approx(100.0) and lazy["publish_rate"] == pytest.approx(10.0)
        assert qq["workers"] == 2 and lazy["workers"] == 1
        assert qq["e2e_p99_ms"] == pytest.approx(5.0, rel=0.011) and lazy["e2e_p99_ms"] == pytest.approx(40.0,
                                                                                                          rel=0.011)
        assert qq["foreground"] is True and lazy["foreground"] is False
        assert qq["lost"] == 0 and lazy["lost"] == 3
        assert lazy["group_detail"] == '{"queue_type": "classic"}' and qq["target_rate"] == 100.0
    # the generator fell behind in phase 2: a run-wide event, so both groups' rows of that phase are invalid
    assert got[("mixed", "qq", 2)]["invalid_reason"] == got[("mixed", "lazy", 2)]["invalid_reason"] == "loadgen_behind"
    old = got[("pure", "main", 1)]
    assert old["foreground"] is True and old["publish_rate"] == pytest.approx(100.0) and old["group_detail"] is None


def test_the_raw_gate_wants_every_group_of_every_phase() -> None:
    """The raw suite's cross-record rule per (run, phase, group): a group whose accounting is missing fails."""
    phases, rows, books = two_group_records()
    raw = {"phases": rows_as_read("phases", phases), "client_seconds": rows_as_read("client_seconds", rows),
           "accounting": rows_as_read("accounting", [b for b in books if b["group"] != "lazy"]),
           "node_seconds": rows_as_read("node_seconds", [])}
    frame = gate.raw_frames(raw, {"mixed": 2, "pure": 1}, {"mixed": ["qq", "lazy"]})["raw_run_phase"]
    seen = {(r.scenario, r.group, r.phase): (r.in_phases_table, r.in_client_seconds, r.in_accounting)
            for r in frame.itertuples()}
    assert seen == {("mixed", "qq", 1): (True, True, True), ("mixed", "qq", 2): (True, True, True),
                    ("mixed", "lazy", 1): (True, True, False), ("mixed", "lazy", 2): (True, True, False),
                    ("pure", "main", 1): (True, True, False)}
